import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { ensureAssets, resolveKubernetesVersion } from "../assets/index.js";
import type { BinaryName } from "../assets/versions.js";
import { type CrdObject, installCrds, readCrds } from "../crds.js";
import { ControlPlaneError } from "../errors.js";
import { AdminHttp } from "../http.js";
import { validatePodBehaviours } from "../kwok-stages.js";
import { freePorts } from "../ports.js";
import { ProcessGroup, tempDir } from "../process.js";
import { compactEtcd } from "./compaction.js";
import type { Component, ComponentName, StartContext } from "./component.js";
import { mintServiceAccountToken, type PlanePki, writeKubeconfig, writePlanePki } from "./credentials.js";
import { componentFailure } from "./diagnosis.js";
import { Etcd } from "./etcd.js";
import { type AuditRecord, auditLogPathIn, readAuditLog } from "./hardened.js";
import { KubeApiServer } from "./kube-apiserver.js";
import { KubeControllerManager } from "./kube-controller-manager.js";
import { KubeScheduler } from "./kube-scheduler.js";
import { Kwok } from "./kwok.js";
import {
  type ComponentInfo,
  type ControlPlaneOptions,
  DEFAULT_NODES,
  DEFAULT_START_TIMEOUT_MS,
  type Profile,
  type UserCredentials,
} from "./options.js";

/** Port races between parallel workers are rare; three fresh tries make them vanish. */
const START_ATTEMPTS = 3;
/** What `stop()` removes from a folder it keeps (the caller's, or one whose start failed): all but logs/. */
const PLANE_FILES = [
  "etcd",
  "pki",
  "users",
  "kubeconfig",
  "admission.yaml",
  "audit-policy.yaml",
  "kwok-stages.yaml",
];

/** The plane's folder and processes, from `start()` on. */
interface Started {
  dir: string;
  group: ProcessGroup;
}

/** What one start attempt made: its ports, certificates and components. */
interface Attempt {
  pki: PlanePki;
  admin: AdminHttp;
  etcd: Etcd;
  apiServer: KubeApiServer;
}

/**
 * A real Kubernetes control plane on loopback, for tests, demos and local runs.
 *
 * - `apiserver` profile: etcd + kube-apiserver, what envtest gives Go users. Objects are stored and
 *   validated, watches and RBAC are real; nothing reconciles them (no Pods run).
 * - `cluster` profile: adds kube-controller-manager, kube-scheduler and kwok with fake nodes, so a
 *   Deployment's Pods are scheduled and become Running and Ready, and garbage collection deletes
 *   the dependents of a deleted owner.
 *
 * This class composes the components (one module each, beside it: their flags, start and
 * readiness): it picks the ports and the folder, starts them in order, and stops them on every
 * exit path.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 *
 * const plane = await new ControlPlane({ profile: "apiserver", crds: ["config/crd"] }).start();
 * try {
 *   process.env.KUBECONFIG = plane.kubeconfigPath; // kubectl and clients now talk to it
 * } finally {
 *   await plane.stop();
 * }
 * ```
 */
export class ControlPlane {
  /** Which components run: see {@link Profile}. */
  readonly profile: Profile;
  /** Started with `hardened: true`. */
  readonly hardened: boolean;
  /** The exact Kubernetes release this plane runs, e.g. `1.33.13`. */
  readonly kubernetesVersion: string;
  private readonly options: ControlPlaneOptions;
  private startCalled = false;
  private started: Started | undefined;
  private attempt: Attempt | undefined;
  private keepLogs = false;

  constructor(options: ControlPlaneOptions = {}) {
    this.options = options;
    this.profile = options.profile ?? "apiserver";
    this.hardened = options.hardened ?? false;
    this.kubernetesVersion = resolveKubernetesVersion(
      options.kubernetesVersion ?? options.assets?.kubernetesVersion,
    );
    const nodes = options.nodes ?? DEFAULT_NODES;
    if (!Number.isInteger(nodes) || nodes < 0)
      throw new ControlPlaneError(`nodes must be a whole number ≥ 0, got ${nodes}`);
    if (options.podBehaviours?.length) {
      if (this.profile !== "cluster")
        throw new ControlPlaneError('podBehaviours need pods to run: use them with `profile: "cluster"`');
      validatePodBehaviours(options.podBehaviours);
    }
  }

  /** The plane's folder (certificates, kubeconfig, logs). */
  get dir(): string {
    return this.folder("dir").dir;
  }

  /** `https://127.0.0.1:<port>` */
  get server(): string {
    return this.current("server").apiServer.url;
  }

  /** etcd's client URL (`http://127.0.0.1:<port>`), for tests that compact or inspect storage. */
  get etcdUrl(): string {
    return this.current("etcdUrl").etcd.url;
  }

  /** A kubeconfig file for the admin user (group `system:masters`). */
  get kubeconfigPath(): string {
    return join(this.dir, "kubeconfig");
  }

  /** The admin kubeconfig's text. */
  get kubeconfig(): string {
    return readFileSync(this.kubeconfigPath, "utf8");
  }

  /** PEM of the CA that signed the API server's serving certificate and the client certificates. */
  get caCert(): string {
    return this.current("caCert").pki.ca.cert;
  }

  /** The Kubernetes version the API server reports. */
  get version(): string {
    return `v${this.kubernetesVersion}`;
  }

  /**
   * The API server's audit log (JSON lines, one per request, Metadata level) of a hardened plane:
   * read it to see which user made a request.
   */
  get auditLogPath(): string {
    if (!this.hardened)
      throw new ControlPlaneError(
        "auditLogPath: only a hardened plane writes an audit log; start it with `hardened: true`",
      );
    return auditLogPathIn(this.dir);
  }

  /**
   * The requests in a hardened plane's audit log so far, oldest first: who (`user.username`) made
   * which request (`verb`, `objectRef`), and the answer's code. Throws on a plane that is not hardened.
   *
   * @example
   * ```ts
   * const plane = await new ControlPlane({ hardened: true }).start();
   * const refused = plane.auditRecords().filter((record) => record.responseStatus?.code === 403);
   * ```
   */
  auditRecords(): AuditRecord[] {
    return readAuditLog(this.auditLogPath);
  }

  /** The running components with their pids and log files. */
  get components(): ComponentInfo[] {
    return (this.started?.group.running ?? []).map((p) => ({
      name: p.name as ComponentName,
      pid: p.pid,
      logPath: p.logPath,
    }));
  }

  /**
   * Starts every component and waits until the plane is usable: /readyz, the `default` namespace,
   * and in the `cluster` profile Ready nodes and the `default` ServiceAccount. Then installs CRDs.
   */
  async start(): Promise<this> {
    if (this.startCalled) throw new ControlPlaneError("This control plane was already started");
    this.startCalled = true;
    const assets = await ensureAssets(this.neededBinaries(), {
      ...this.options.assets,
      kubernetesVersion: this.kubernetesVersion,
    });
    const started = this.prepare();
    try {
      await started.group.startRetryingPortClashes(START_ATTEMPTS, () =>
        this.startOnce(started, assets.binaries, assets.kwokStages),
      );
    } catch (error) {
      // The logs are the evidence: keep them, remove everything else.
      this.keepLogs = true;
      await this.stop();
      throw error;
    }
    if (this.options.crds?.length) await this.installCrds(this.options.crds);
    return this;
  }

  /** Installs CRDs from files or folders, and waits until each is established and discoverable. */
  async installCrds(paths: string[]): Promise<string[]> {
    return installCrds(this.admin(), readCrds(paths.map((p) => resolve(p))));
  }

  /** Installs CRD objects already in memory (e.g. generated from a resource definition). */
  async installCrdObjects(crds: CrdObject[]): Promise<string[]> {
    return installCrds(this.admin(), crds);
  }

  /**
   * Stops kube-apiserver and starts it again on the same port with the same flags (etcd keeps the
   * data): what clients see during a control-plane upgrade. Resolves when /readyz passes again.
   */
  async restartApiServer(): Promise<void> {
    const { group } = this.folder("restartApiServer");
    const old = group.running.find((p) => p.name === "kube-apiserver");
    if (!old) throw new ControlPlaneError("kube-apiserver is not running");
    await group.restart(old);
    await group.waitUntil(
      "kube-apiserver to pass /readyz after a restart",
      async () => (await this.admin().get("/readyz")).status === 200,
      { timeoutMs: DEFAULT_START_TIMEOUT_MS, failure: componentFailure },
    );
  }

  /**
   * Compacts etcd's history up to now, so watches and lists from an older resourceVersion get
   * 410 Gone (for resources the API server does not serve from its watch cache, see
   * `--watch-cache-sizes`). Returns the compacted revision.
   */
  compactEtcd(): Promise<number> {
    return compactEtcd(this.etcdUrl);
  }

  /**
   * A kubeconfig for another user, signed by the plane's CA, for testing what RBAC lets a user do.
   * The user has no permissions until you bind a role to it (unless a group grants some).
   */
  addUser(user: string, groups: string[] = []): UserCredentials {
    const { pki } = this.current("addUser");
    const cert = pki.ca.issueClient({ user, groups });
    const kubeconfigPath = join(this.dir, "users", `${user.replace(/[^\w.-]/g, "_")}.kubeconfig`);
    writeKubeconfig(kubeconfigPath, {
      server: this.server,
      caCert: pki.ca.cert,
      clientCert: cert.cert,
      clientKey: cert.key,
      userName: user,
    });
    return { user, groups, kubeconfigPath };
  }

  /**
   * A kubeconfig for a ServiceAccount, with a token the TokenRequest API minted (what a pod's
   * projected token is): to run an operator as its own ServiceAccount, bound only to the RBAC it
   * ships, and see what a cluster would refuse it. The ServiceAccount must exist.
   *
   * @example
   * ```ts
   * const operator = await plane.serviceAccountUser("nginx-operator-system", "nginx-operator");
   * spawn("node", ["src/main.ts"], { env: { ...process.env, KUBECONFIG: operator.kubeconfigPath } });
   * ```
   */
  async serviceAccountUser(
    namespace: string,
    name: string,
    options: { expirationSeconds?: number } = {},
  ): Promise<UserCredentials & { token: string }> {
    const { pki, admin } = this.current("serviceAccountUser");
    const token = await mintServiceAccountToken(admin, namespace, name, options.expirationSeconds ?? 3600);
    const user = `system:serviceaccount:${namespace}:${name}`;
    const kubeconfigPath = join(this.dir, "users", `${namespace}.${name}.kubeconfig`);
    writeKubeconfig(kubeconfigPath, { server: this.server, caCert: pki.ca.cert, token, userName: user });
    return {
      user,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
      kubeconfigPath,
      token,
    };
  }

  /** Ends every process (in reverse start order) and removes the plane's files. Safe to call twice. */
  async stop(): Promise<void> {
    await this.started?.group.close();
    this.attempt?.admin.close();
  }

  /** `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private neededBinaries(): BinaryName[] {
    const base: BinaryName[] = ["etcd", "kube-apiserver"];
    if (this.profile === "cluster") base.push("kube-controller-manager", "kube-scheduler", "kwok");
    return base;
  }

  /** The folder, and the process group that guards it from now on (exit handlers, watchdog). */
  private prepare(): Started {
    const ownsDir = !this.options.dir;
    const dir = this.options.dir ? resolve(this.options.dir) : tempDir("kubeloop-");
    for (const sub of ["pki", "logs"]) mkdirSync(join(dir, sub), { recursive: true });
    const group = new ProcessGroup({
      pidFile: join(dir, "pids"),
      removeOnOrphan: ownsDir ? [dir] : [join(dir, "etcd"), join(dir, "pki")],
      handleSignals: this.options.handleSignals ?? true,
      removeFiles: () => {
        const entries = ownsDir && !this.keepLogs ? [dir] : PLANE_FILES.map((entry) => join(dir, entry));
        for (const path of entries) rmSync(path, { recursive: true, force: true });
      },
      // Clients of the API server first, together; then the API server; etcd last, so nothing
      // logs a dead peer.
      stopOrder: ([etcd, apiServer, ...clients]) => [
        clients,
        apiServer ? [apiServer] : [],
        etcd ? [etcd] : [],
      ],
    });
    this.started = { dir, group };
    return this.started;
  }

  private async startOnce(
    { dir, group }: Started,
    binaries: Partial<Record<BinaryName, string>>,
    kwokStages: string | undefined,
  ): Promise<void> {
    const deadline = Date.now() + (this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
    const [etcdPort, peerPort, apiPort, kcmPort, schedulerPort, kwokPort] = (await freePorts(6)) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const pki = writePlanePki(dir);
    const etcd = new Etcd({ client: etcdPort, peer: peerPort });
    const apiServer = new KubeApiServer({
      etcdUrl: etcd.url,
      port: apiPort,
      pki,
      profile: this.profile,
      hardened: this.hardened,
      extraArgs: this.options.apiServerArgs ?? [],
    });
    const kubeconfigPath = this.kubeconfigPath;
    writeKubeconfig(kubeconfigPath, {
      server: apiServer.url,
      caCert: pki.ca.cert,
      clientCert: pki.admin.cert,
      clientKey: pki.admin.key,
    });
    this.attempt?.admin.close();
    const admin = new AdminHttp({
      server: apiServer.url,
      caCert: pki.ca.cert,
      clientCert: pki.admin.cert,
      clientKey: pki.admin.key,
    });
    const context: StartContext = {
      dir,
      admin,
      spawn: (name: ComponentName, args: string[]) =>
        group.spawn({
          name,
          binary: this.binary(binaries, name),
          args,
          logPath: join(dir, "logs", `${name}.log`),
          cwd: dir,
        }),
      waitUntil: (what, check) =>
        group.waitUntil(what, check, {
          timeoutMs: Math.max(1000, deadline - Date.now()),
          failure: componentFailure,
        }),
    };
    this.attempt = { pki, admin, etcd, apiServer };

    // Each component needs the one before it; the API server's clients only the API server.
    for (const component of [etcd, apiServer]) {
      component.start(context);
      await component.ready(context);
    }
    if (this.profile !== "cluster") return;
    const clients: Component[] = [
      new KubeControllerManager({ kubeconfigPath, port: kcmPort, pki }),
      new KubeScheduler({ kubeconfigPath, port: schedulerPort }),
      new Kwok({
        kubeconfigPath,
        port: kwokPort,
        defaultStagesPath: this.require(kwokStages, "kwok stages"),
        podBehaviours: this.options.podBehaviours ?? [],
        nodes: this.options.nodes ?? DEFAULT_NODES,
      }),
    ];
    for (const component of clients) component.start(context);
    for (const component of clients) await component.ready(context);
  }

  private binary(binaries: Partial<Record<BinaryName, string>>, name: ComponentName): string {
    return this.require(binaries[name], `${name} binary`);
  }

  private admin(): AdminHttp {
    return this.current("API access").admin;
  }

  /** The folder and processes, or an error saying `what` needs a started plane. */
  private folder(what: string): Started {
    return this.require(this.started, what);
  }

  /** The running attempt's certificates, components and API access. */
  private current(what: string): Attempt {
    return this.require(this.attempt, what);
  }

  private require<T>(value: T | undefined, what: string): T {
    if (value === undefined)
      throw new ControlPlaneError(`${what} is not available: start() the control plane first`);
    return value;
  }
}
