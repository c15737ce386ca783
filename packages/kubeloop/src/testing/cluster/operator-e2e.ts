import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { pollUntil } from "../../util/index.js";
import { ControlPlane } from "../control-plane.js";
import { type KubectlResult, kubectl } from "../kubectl.js";
import { runPod } from "./run-pod.js";

const execFileAsync = promisify(execFile);

/** What {@link OperatorE2e.start} builds, where it runs it, and how long it may take. */
export interface OperatorE2eOptions {
  /** The operator project's folder: its package.json has the `kubeloop` section. */
  project: string;
  /** The image's name. Default: `kubeloop.local/<name>:e2e` (never pulled: it is loaded into the nodes). */
  image?: string;
  /** Nodes of the plane. Default 1. */
  nodes?: number;
  /** How long build, start, load and rollout may take together. Default 8 minutes (a cold image cache). */
  timeoutMs?: number;
}

interface ProjectSection {
  name: string;
  namespace: string;
}

/**
 * An operator as its users ship it, on real nodes: `kubeloop build` makes its image, a node-profile
 * {@link ControlPlane} loads it into containerd, `kubeloop deploy` installs the generated config/
 * (CRDs, RBAC, webhooks with their certificate, the Deployment) and the operator runs as pods. This
 * is what a scaffolded project's `npm run test:e2e` stands on, as kubebuilder's e2e suite stands on
 * kind; the node profile needs root (see {@link ControlPlane}).
 *
 * @example
 * ```ts
 * const e2e = await OperatorE2e.start({ project: process.cwd() });
 * try {
 *   await e2e.kubectl(["apply", "-f", "config/samples"]);
 *   await e2e.waitForCondition("widget/widget-sample", "Ready");
 *   const metrics = await e2e.scrapeMetrics();
 *   if (!metrics.includes("controller_runtime_reconcile_total")) throw new Error("no reconcile metrics");
 * } finally {
 *   await e2e.stop();
 * }
 * ```
 */
export class OperatorE2e {
  /** The operator's name (package.json `kubeloop.name`): its Deployment, ServiceAccount and roles. */
  readonly name: string;
  /** The namespace `kubeloop deploy` installs it in. */
  readonly namespace: string;

  private constructor(
    readonly plane: ControlPlane,
    readonly project: string,
    readonly image: string,
    section: ProjectSection,
    private readonly work: string,
  ) {
    this.name = section.name;
    this.namespace = section.namespace;
  }

  /** Builds the image while the plane starts, loads it, deploys the operator and waits for its rollout. */
  static async start(options: OperatorE2eOptions): Promise<OperatorE2e> {
    const project = resolve(options.project);
    const section = readSection(project);
    const image = options.image ?? `kubeloop.local/${section.name}:e2e`;
    const timeoutMs = options.timeoutMs ?? 480_000;
    const work = mkdtempSync(join(tmpdir(), "kubeloop-e2e-"));
    const tarball = join(work, "image.tar");
    const building = runCli(
      project,
      ["build", project, "--tarball", tarball, "--tag", image, "--platform", platform()],
      {
        timeoutMs,
      },
    );
    const starting = new ControlPlane({ profile: "node", nodes: options.nodes ?? 1 }).start();
    const [built, started] = await Promise.allSettled([building, starting]);
    if (started.status === "rejected") {
      rmSync(work, { recursive: true, force: true });
      throw started.reason;
    }
    const e2e = new OperatorE2e(started.value, project, image, section, work);
    try {
      if (built.status === "rejected") throw built.reason;
      const names = await e2e.plane.loadImage(tarball);
      if (!names.some((loaded) => loaded.endsWith(image)))
        throw new Error(`OperatorE2e: the image tarball holds ${names.join(", ")}, not ${image}`);
      await runCli(project, ["deploy", "--image", image], {
        timeoutMs,
        kubeconfig: e2e.plane.kubeconfigPath,
      });
      const rollout = await e2e.kubectl(
        [
          "-n",
          e2e.namespace,
          "rollout",
          "status",
          `deployment/${e2e.name}`,
          `--timeout=${Math.round(timeoutMs / 1000)}s`,
        ],
        { timeoutMs: timeoutMs + 10_000 },
      );
      if (rollout.code !== 0)
        throw new Error(
          `OperatorE2e: ${e2e.name} did not roll out:\n${rollout.stderr}\n${await e2e.describePods()}`,
        );
      return e2e;
    } catch (error) {
      await e2e.stop();
      throw error;
    }
  }

  /** kubectl against the plane; resolves with the exit code and output, never throws on a non-zero exit. */
  kubectl(args: string[], options: { input?: string; timeoutMs?: number } = {}): Promise<KubectlResult> {
    return kubectl(args, { kubeconfig: this.plane.kubeconfigPath, ...options });
  }

  /**
   * Waits until `resource` (`kind/name` as kubectl names it, e.g. what `kubectl apply -o name` prints)
   * has the condition `type` with status True.
   */
  async waitForCondition(
    resource: string,
    type: string,
    namespace = "default",
    timeoutMs = 120_000,
  ): Promise<void> {
    let last = "";
    await pollUntil(
      async () => {
        const read = await this.kubectl([
          ...["-n", namespace, "get", resource],
          ...["-o", `jsonpath={.status.conditions[?(@.type=="${type}")].status}`],
        ]);
        last = read.code === 0 ? read.stdout || "(no condition)" : read.stderr.trim();
        return read.stdout === "True";
      },
      { timeoutMs, intervalMs: 500, message: `${resource} to be ${type}=True (last: ${last})` },
    );
  }

  /**
   * Reads the operator's `/metrics` as Prometheus would in the cluster: over HTTPS from a pod, with the
   * token of a ServiceAccount bound to the generated `<name>-metrics-reader` ClusterRole. Throws with
   * the HTTP status when the answer is not 200.
   */
  async scrapeMetrics(): Promise<string> {
    const reader = `${this.name}-e2e-scraper`;
    const setup = [
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: reader, namespace: this.namespace } },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: reader },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: `${this.name}-metrics-reader`,
        },
        subjects: [{ kind: "ServiceAccount", name: reader, namespace: this.namespace }],
      },
    ];
    const applied = await this.kubectl(["apply", "-f", "-"], {
      input: JSON.stringify({ apiVersion: "v1", kind: "List", items: setup }),
    });
    if (applied.code !== 0) throw new Error(`OperatorE2e: the scraper's ServiceAccount: ${applied.stderr}`);
    const url = `https://${this.name}-metrics.${this.namespace}.svc.cluster.local:8443/metrics`;
    const token = "/var/run/secrets/kubernetes.io/serviceaccount/token";
    // -k: the manager serves metrics with its own certificate; the token is what is checked. The
    // status comes last, on its own line, after the body.
    const script = `curl -sk --retry 5 --retry-all-errors -w '\\n%{http_code}' -H "Authorization: Bearer $(cat ${token})" ${url}`;
    const run = await runPod({
      kubeconfig: this.plane.kubeconfigPath,
      namespace: this.namespace,
      name: `${reader}-${Date.now().toString(36)}`,
      image: await this.plane.loadBaseImage("tools"),
      command: ["sh", "-c", script],
      // What the operator's namespace admits: Pod Security "restricted".
      spec: {
        serviceAccountName: reader,
        securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } },
      },
      container: { securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } },
    });
    const lines = run.logs.trimEnd().split("\n");
    const status = lines.pop();
    if (run.phase !== "Succeeded" || status !== "200")
      throw new Error(`OperatorE2e: ${url} answered ${status || run.phase}:\n${run.logs.slice(0, 2000)}`);
    return lines.join("\n");
  }

  /** The operator pods' state and their last log lines: what a failed test prints. */
  async describePods(): Promise<string> {
    const selector = `app.kubernetes.io/name=${this.name}`;
    const pods = await this.kubectl(["-n", this.namespace, "get", "pods", "-l", selector, "-o", "wide"]);
    const logs = await this.kubectl([
      "-n",
      this.namespace,
      "logs",
      "-l",
      selector,
      "--tail=30",
      "--all-containers",
    ]);
    return `${pods.stdout}${pods.stderr}\n${logs.stdout}${logs.stderr}`;
  }

  /** Stops the plane (every node, pod and process of it) and removes the image tarball. */
  async stop(): Promise<void> {
    try {
      await this.plane.stop();
    } finally {
      rmSync(this.work, { recursive: true, force: true });
    }
  }
}

function readSection(project: string): ProjectSection {
  const path = join(project, "package.json");
  if (!existsSync(path))
    throw new Error(`OperatorE2e: ${project} has no package.json: give the operator project's folder`);
  const pkg = JSON.parse(readFileSync(path, "utf8")) as {
    name?: string;
    kubeloop?: { name?: string; namespace?: string };
  };
  const name = pkg.kubeloop?.name ?? pkg.name;
  if (!pkg.kubeloop || !name)
    throw new Error(
      `OperatorE2e: ${path} has no "kubeloop" section: is ${project} a kubeloop project (kubeloop init)?`,
    );
  return { name, namespace: pkg.kubeloop.namespace ?? `${name}-system` };
}

function platform(): string {
  return process.arch === "arm64" ? "linux/arm64" : "linux/amd64";
}

/** kubeloop's CLI, the one this module ships with. */
function cliPath(): string {
  // dist/testing/cluster/operator-e2e.js → dist/cli/main.js; from the sources, the package's built CLI.
  for (let dir = import.meta.dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, "dist/cli/main.js");
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate;
    if (existsSync(join(dir, "cli/main.js"))) return join(dir, "cli/main.js");
  }
  throw new Error(
    "OperatorE2e: kubeloop's CLI (dist/cli/main.js) is not built: run `npm run build` in kubeloop",
  );
}

async function runCli(
  cwd: string,
  args: string[],
  options: { timeoutMs: number; kubeconfig?: string },
): Promise<string> {
  const env = { ...process.env, ...(options.kubeconfig ? { KUBECONFIG: options.kubeconfig } : {}) };
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [cliPath(), ...args], {
      cwd,
      env,
      timeout: options.timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout + stderr;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `OperatorE2e: kubeloop ${args[0]} failed: ${failed.stderr || failed.stdout || failed.message}`,
    );
  }
}
