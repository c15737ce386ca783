import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { groupOf } from "../../../client/internal.js";
import { ensureAssets } from "../../assets/index.js";
import type { BinaryName } from "../../assets/versions.js";
import { probe } from "../../control-plane/component.js";
import { ControlPlane } from "../../control-plane/control-plane.js";
import { componentFailure } from "../../control-plane/diagnosis.js";
import type { ComponentInfo } from "../../control-plane/options.js";
import { ControlPlaneError } from "../../errors.js";
import type { AdminHttp } from "../../http.js";
import { freePorts } from "../../ports.js";
import { ProcessGroup, tempDir } from "../../process.js";
import { waitFor } from "../../wait.js";
import {
  aggregatedApiObjects,
  answers,
  KARMADA_CLUSTER_NAMESPACE,
  KARMADA_SYSTEM,
  type KarmadaCerts,
  type KarmadaPorts,
  karmadaArgs,
  karmadaProbes,
  webhookConfigurations,
  writeKarmadaCerts,
} from "./components.js";
import { adminFromKubeconfig, clusterReady, createOrKeep, joinMember, REGION_LABEL } from "./join.js";
import {
  DEFAULT_MEMBERS,
  KARMADA_START_TIMEOUT_MS,
  type KarmadaComponentInfo,
  type KarmadaComponentName,
  type KarmadaMemberOptions,
  type KarmadaPlaneOptions,
} from "./options.js";

const KARMADA_BINARIES: KarmadaComponentName[] = [
  "karmada-aggregated-apiserver",
  "karmada-webhook",
  "karmada-controller-manager",
  "karmada-scheduler",
];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A member cluster of a {@link KarmadaPlane}: its name and region on Karmada, and its own control plane. */
export interface KarmadaMember {
  /** The Cluster object's name on Karmada. */
  readonly name: string;
  /** Its `topology.kubernetes.io/region` label and `spec.region`. */
  readonly region: string;
  /** The member's control plane: `kubeconfigPath` for kubectl, `restartApiServer()` for outages. */
  readonly plane: ControlPlane;
}

/**
 * Karmada on loopback, with member clusters: Karmada's own API server (kube-apiserver, etcd and
 * kube-controller-manager, as a kubeloop plane), its aggregated API server, webhook,
 * controller-manager and scheduler (built from the pinned release, see assets/karmada-build.ts),
 * its CRDs, and members (kubeloop planes of any profile) joined in push mode, each labelled with
 * its `topology.kubernetes.io/region`. Everything stops on every exit path.
 *
 * Apply resource templates and policies to {@link KarmadaPlane.kubeconfigPath}; read what reached
 * each member through `member(name).plane.kubeconfigPath`. docs/multi-cluster.md shows a fleet.
 *
 * @example
 * ```ts
 * import { kubectl } from "kubeloop/testing";
 * import { KarmadaPlane } from "kubeloop/testing/servers";
 *
 * await using fleet = await new KarmadaPlane({
 *   memberProfile: "cluster",
 *   members: [
 *     { name: "shanghai", region: "cn-east" },
 *     { name: "singapore", region: "ap-southeast" },
 *   ],
 * }).start();
 * await kubectl(["apply", "-f", "config/karmada"], { kubeconfig: fleet.kubeconfigPath });
 * const there = await kubectl(["get", "nginx", "-A"], { kubeconfig: fleet.member("shanghai").plane.kubeconfigPath });
 * ```
 */
export class KarmadaPlane {
  /** Karmada's API server, etcd and kube-controller-manager (a `cluster` plane without nodes). */
  readonly karmada: ControlPlane;
  /** The members, in the order given, joined in push mode once `start()` resolves. */
  readonly members: readonly KarmadaMember[];
  /** Seconds `start()` took, from the first process to every member Ready on Karmada. */
  startSeconds: number | undefined;
  private readonly options: KarmadaPlaneOptions;
  private readonly dir: string;
  private readonly ownsDir: boolean;
  private group: ProcessGroup | undefined;
  private admin: AdminHttp | undefined;
  private startCalled = false;
  private stopping: Promise<void> | undefined;

  constructor(options: KarmadaPlaneOptions = {}) {
    this.options = options;
    const members = options.members ?? DEFAULT_MEMBERS;
    checkMembers(members);
    this.ownsDir = options.dir === undefined;
    // Real nodes see their plane's tmp/ as /tmp, so a node-profile member cannot live under /tmp.
    const realNodes = members.some((m) => (m.profile ?? options.memberProfile) === "node");
    this.dir = options.dir
      ? resolve(options.dir)
      : realNodes
        ? mkdtempSync(join("/var/tmp", "kubeloop-karmada-"))
        : tempDir("kubeloop-karmada-");
    const common = {
      handleSignals: options.handleSignals ?? true,
      startTimeoutMs: options.startTimeoutMs ?? KARMADA_START_TIMEOUT_MS,
      ...(options.assets ? { assets: options.assets } : {}),
      ...(options.kubernetesVersion ? { kubernetesVersion: options.kubernetesVersion } : {}),
    };
    const karmadaDir = join(this.dir, "karmada");
    this.karmada = new ControlPlane({
      ...common,
      profile: "cluster",
      nodes: 0,
      dir: karmadaDir,
      apiServerArgs: aggregationArgs(karmadaDir),
    });
    this.members = members.map((member) => ({
      name: member.name,
      region: member.region,
      plane: new ControlPlane({
        ...common,
        profile: member.profile ?? options.memberProfile ?? "apiserver",
        nodes: member.nodes ?? 1,
        dir: join(this.dir, "members", member.name),
      }),
    }));
  }

  /** The kubeconfig of Karmada's API server (admin): where templates and policies go. */
  get kubeconfigPath(): string {
    return this.karmada.kubeconfigPath;
  }

  /** Karmada's API server, `https://127.0.0.1:<port>`. */
  get server(): string {
    return this.karmada.server;
  }

  /** Karmada's processes (its API server's and its own), with pids and log files. */
  get components(): (ComponentInfo | KarmadaComponentInfo)[] {
    const own = (this.group?.running ?? []).map((p) => ({
      name: p.name as KarmadaComponentName,
      pid: p.pid,
      logPath: p.logPath,
    }));
    return [...this.karmada.components, ...own];
  }

  /** The member called `name`. */
  member(name: string): KarmadaMember {
    const found = this.members.find((member) => member.name === name);
    if (!found)
      throw new ControlPlaneError(
        `no member ${name} (members: ${this.members.map((m) => m.name).join(", ")})`,
      );
    return found;
  }

  /** Starts Karmada and the members (side by side), Karmada's processes, and joins every member. */
  async start(): Promise<this> {
    if (this.startCalled) throw new ControlPlaneError("This Karmada plane was already started");
    this.startCalled = true;
    const started = Date.now();
    try {
      const assets = await ensureAssets(KARMADA_BINARIES as BinaryName[], {
        ...this.options.assets,
        ...(this.options.kubernetesVersion ? { kubernetesVersion: this.options.kubernetesVersion } : {}),
      });
      await Promise.all([this.karmada.start(), ...this.members.map((member) => member.plane.start())]);
      this.admin = adminFromKubeconfig(this.kubeconfigPath);
      await this.startKarmada(this.admin, assets.binaries);
      for (const member of this.members) {
        await joinMember(this.admin, {
          name: member.name,
          region: member.region,
          server: member.plane.server,
          caCert: member.plane.caCert,
          kubeconfigPath: member.plane.kubeconfigPath,
          ...this.labelsOf(member.name),
        });
      }
      const admin = this.admin;
      await this.waitUntil("every member to be Ready on Karmada", async () =>
        (await Promise.all(this.members.map((member) => clusterReady(admin, member.name)))).every(Boolean),
      );
    } catch (error) {
      await this.stop();
      throw error;
    }
    this.startSeconds = Math.round((Date.now() - started) / 100) / 10;
    return this;
  }

  /** Stops Karmada's processes, then every plane, and removes the folder (but for logs when it was given). Safe twice. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.group?.close();
      this.admin?.close();
      await Promise.all([this.karmada.stop(), ...this.members.map((member) => member.plane.stop())]);
      if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
    })();
    return this.stopping;
  }

  /** `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Karmada's namespaces and CRDs, then its processes in the order each needs the one before. */
  private async startKarmada(admin: AdminHttp, binaries: Partial<Record<BinaryName, string>>): Promise<void> {
    for (const ns of [KARMADA_SYSTEM, KARMADA_CLUSTER_NAMESPACE])
      await createOrKeep(
        admin,
        "/api/v1/namespaces",
        { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
        `namespace ${ns}`,
      );
    const home = dirname(binaries["karmada-controller-manager"] as string);
    await this.karmada.installCrds([join(home, "crds")]);
    const certs = writeKarmadaCerts(this.dir);
    const ports = await karmadaPorts();
    const group = this.processGroup();
    const args = karmadaArgs(this.kubeconfigPath, this.karmada.etcdUrl, ports, certs);
    const probes = karmadaProbes(ports);
    const spawn = (name: KarmadaComponentName) =>
      group.spawn({
        name,
        binary: binaries[name] as string,
        args: args[name],
        logPath: join(this.dir, "logs", `${name}.log`),
        cwd: this.dir,
      });
    const healthy = (name: KarmadaComponentName) =>
      this.waitUntil(`${name} to be healthy`, () =>
        (name === "karmada-webhook" ? answers : probe)(probes[name] as string),
      );

    spawn("karmada-aggregated-apiserver");
    await healthy("karmada-aggregated-apiserver");
    await this.apply(admin, aggregatedApiObjects(ports.aggregatedApiServer, certs.caCert));
    await this.waitUntil(
      "Karmada's Cluster API (cluster.karmada.io, through the aggregated API server)",
      async () => (await admin.get("/apis/cluster.karmada.io/v1alpha1/clusters")).status === 200,
    );
    spawn("karmada-webhook");
    await healthy("karmada-webhook");
    await this.apply(admin, this.webhooks(home, ports, certs));
    spawn("karmada-controller-manager");
    spawn("karmada-scheduler");
    await healthy("karmada-controller-manager");
    await healthy("karmada-scheduler");
  }

  private webhooks(home: string, ports: KarmadaPorts, certs: KarmadaCerts): object[] {
    const path = join(home, "webhook-configuration.yaml");
    if (!existsSync(path))
      throw new ControlPlaneError(
        `${path} is missing: rebuild Karmada (npx kubeloop assets build --component karmada)`,
      );
    return webhookConfigurations(path, ports.webhook, certs.caCert);
  }

  /** Creates each object (cluster-scoped or namespaced) through its API path. */
  private async apply(admin: AdminHttp, objects: object[]): Promise<void> {
    for (const object of objects) {
      const { apiVersion, kind, metadata } = object as {
        apiVersion: string;
        kind: string;
        metadata: { name: string; namespace?: string };
      };
      const base = groupOf(apiVersion) ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const ns = metadata.namespace ? `/namespaces/${metadata.namespace}` : "";
      await createOrKeep(admin, `${base}${ns}/${pluralOf(kind)}`, object, `${kind} ${metadata.name}`);
    }
  }

  private labelsOf(name: string): { labels?: Record<string, string> } {
    const labels = (this.options.members ?? DEFAULT_MEMBERS).find((m) => m.name === name)?.labels;
    return labels ? { labels } : {};
  }

  /** Karmada's processes: stopped before the planes, killed with them on every exit path. */
  private processGroup(): ProcessGroup {
    mkdirSync(join(this.dir, "logs"), { recursive: true });
    const pki = join(this.dir, "pki");
    this.group = new ProcessGroup({
      pidFile: join(this.dir, "karmada-pids"),
      removeOnOrphan: this.ownsDir ? [this.dir] : [pki],
      handleSignals: this.options.handleSignals ?? true,
      removeFiles: () => rmSync(pki, { recursive: true, force: true }),
    });
    return this.group;
  }

  private waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
    const group = this.group;
    const timeoutMs = this.options.startTimeoutMs ?? KARMADA_START_TIMEOUT_MS;
    if (!group) return waitFor(what, check, { timeoutMs });
    return group.waitUntil(what, check, { timeoutMs, failure: componentFailure });
  }
}

/** What the API server needs to proxy to an aggregated API server (the plane writes these files). */
function aggregationArgs(planeDir: string): string[] {
  const pki = join(planeDir, "pki");
  return [
    `--requestheader-client-ca-file=${join(pki, "ca.crt")}`,
    "--requestheader-allowed-names=front-proxy-client",
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${join(pki, "front-proxy-client.crt")}`,
    `--proxy-client-key-file=${join(pki, "front-proxy-client.key")}`,
  ];
}

async function karmadaPorts(): Promise<KarmadaPorts> {
  const [a, b, c, d, e, f, g, h] = (await freePorts(8)) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return {
    aggregatedApiServer: a,
    webhook: b,
    webhookProbe: c,
    webhookMetrics: d,
    controllerManagerProbe: e,
    controllerManagerMetrics: f,
    schedulerProbe: g,
    schedulerMetrics: h,
  };
}

/** The plural of the few kinds the plane creates itself. */
function pluralOf(kind: string): string {
  return `${kind.toLowerCase()}s`;
}

/** Names are Cluster object names (DNS labels), unique, each with a region. */
function checkMembers(members: readonly KarmadaMemberOptions[]): void {
  if (members.length === 0) throw new ControlPlaneError("a Karmada plane needs at least one member");
  const seen = new Set<string>();
  for (const member of members) {
    if (!DNS_LABEL.test(member.name))
      throw new ControlPlaneError(
        `member name "${member.name}" is not a DNS label (lowercase letters, digits and '-', at most 63)`,
      );
    if (seen.has(member.name)) throw new ControlPlaneError(`member name "${member.name}" is given twice`);
    seen.add(member.name);
    if (!member.region?.trim())
      throw new ControlPlaneError(
        `member ${member.name} has no region: give it one (its ${REGION_LABEL} label)`,
      );
  }
}
