import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type EnsureAssetsOptions, ensureAssets, resolveKubernetesVersion } from "./assets/index.js";
import type { BinaryName } from "./assets/versions.js";
import { startWatchdog, track, untrack } from "./cleanup.js";
import { type CrdObject, installCrds, readCrds } from "./crds.js";
import { ControlPlaneError, quoteLog } from "./errors.js";
import { auditLogPathIn, hardenedApiServerArgs } from "./hardened.js";
import { AdminHttp } from "./http.js";
import { renderKubeconfig } from "./kubeconfig.js";
import { composeKwokStages, type PodBehaviour, validatePodBehaviours } from "./kwok-stages.js";
import { CertificateAuthority, generateKeyPair } from "./pki.js";
import { freePorts } from "./ports.js";
import { type Exit, ManagedProcess } from "./process.js";
import { waitFor } from "./wait.js";

/**
 * A real Kubernetes control plane on loopback, for tests, demos and local runs.
 *
 * - `apiserver` profile: etcd + kube-apiserver, what envtest gives Go users. Objects are stored and
 *   validated, watches and RBAC are real; nothing reconciles them (no Pods run).
 * - `cluster` profile: adds kube-controller-manager, kube-scheduler and kwok with fake nodes, so a
 *   Deployment's Pods are scheduled and become Running and Ready, and garbage collection deletes
 *   the dependents of a deleted owner.
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

export type Profile = "apiserver" | "cluster";

export interface ControlPlaneOptions {
  /** Default `apiserver`. */
  profile?: Profile;
  /** Fake nodes in the `cluster` profile. Default 1. */
  nodes?: number;
  /**
   * The folder for certificates, the kubeconfig, etcd's data and the logs. Default: a fresh folder
   * under the system temp dir, removed by `stop()` (but for `logs/` when `start()` failed, so the
   * error's log paths can be read). A folder you give is emptied by `stop()` except for `logs/`.
   */
  dir?: string;
  /** CRD files or folders to install once the API server is ready. */
  crds?: string[];
  /** Where binaries come from and whether to build missing ones; see {@link ensureAssets}. */
  assets?: EnsureAssetsOptions;
  /**
   * The Kubernetes release to run: a supported minor (`"1.33"`) or an exact release. Default:
   * `$KUBELOOP_K8S_VERSION`, else the newest supported (docs/compatibility.md lists them). Each
   * version's binaries are built once and cached side by side.
   */
  kubernetesVersion?: string;
  /**
   * Run the API server as hardened clusters do (OpenShift, CIS-benchmarked distributions), with
   * either profile: owner-reference permission enforcement, Pod Security `restricted` enforced on
   * every namespace, AlwaysPullImages, NodeRestriction, EventRateLimit, anonymous requests refused,
   * and an audit log ({@link ControlPlane.auditLogPath}). See hardened.ts. Default false.
   *
   * @example
   * ```ts
   * const plane = await new ControlPlane({ profile: "cluster", hardened: true }).start();
   * ```
   */
  hardened?: boolean;
  /**
   * Pods on the `cluster` profile's fake nodes that misbehave on purpose (never Ready, crash-looping,
   * Ready after a delay), selected by image tag or label; every other pod becomes Ready at once.
   * See kwok-stages.ts.
   *
   * @example
   * ```ts
   * const plane = await new ControlPlane({
   *   profile: "cluster",
   *   podBehaviours: [{ pods: { imageTagContains: "broken" }, behaviour: "never-ready" }],
   * }).start();
   * ```
   */
  podBehaviours?: PodBehaviour[];
  /** Extra kube-apiserver flags (`--flag=value`), appended after ours so they win. */
  apiServerArgs?: string[];
  /** Time allowed for each start attempt. Default 90 s (a cold cluster profile on 2 busy cores). */
  startTimeoutMs?: number;
  /**
   * Kill the plane on SIGINT/SIGTERM/SIGHUP before the process goes (default true). Set false when
   * the caller handles signals itself and calls `stop()`.
   */
  handleSignals?: boolean;
}

/** The components of a plane, in start order; `stop()` goes in reverse. */
export type ComponentName = "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kwok";

export interface ComponentInfo {
  name: ComponentName;
  pid: number | undefined;
  logPath: string;
}

export interface UserCredentials {
  user: string;
  groups: string[];
  kubeconfigPath: string;
}

/** Namespace readiness is quick; a cold kube-apiserver on 2 cores takes 5–15 s to pass /readyz. */
export const DEFAULT_START_TIMEOUT_MS = 90_000;
export const DEFAULT_NODES = 1;
/** Port races between parallel workers are rare; three fresh tries make them vanish. */
const START_ATTEMPTS = 3;
/** The Service IP range; its first address is the `kubernetes` Service, so the serving cert names it. */
const SERVICE_CIDR = "10.0.0.0/24";
const KUBERNETES_SERVICE_IP = "10.0.0.1";
/** Pod IPs kwok hands out; distinct from the Service range so the two never collide. */
const POD_CIDR = "10.244.0.0/16";
const HOST = "127.0.0.1";

export class ControlPlane {
  readonly profile: Profile;
  /** Started with `hardened: true`. */
  readonly hardened: boolean;
  /** The exact Kubernetes release this plane runs, e.g. `1.33.13`. */
  readonly kubernetesVersion: string;
  private readonly options: ControlPlaneOptions;
  private dirPath: string | undefined;
  private ownsDir = false;
  private keepLogs = false;
  private processes: ManagedProcess[] = [];
  private http: AdminHttp | undefined;
  private ca: CertificateAuthority | undefined;
  private serverUrl: string | undefined;
  private etcdClientUrl: string | undefined;
  private apiServerArgs: string[] = [];
  private started = false;
  private stopping: Promise<void> | undefined;
  private readonly disposable = { disposeNow: () => this.disposeNow() };

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
    return this.require(this.dirPath, "dir");
  }

  /** `https://127.0.0.1:<port>` */
  get server(): string {
    return this.require(this.serverUrl, "server");
  }

  /** etcd's client URL (`http://127.0.0.1:<port>`), for tests that compact or inspect storage. */
  get etcdUrl(): string {
    return this.require(this.etcdClientUrl, "etcdUrl");
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
    return this.require(this.ca, "caCert").cert;
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

  /** The running components with their pids and log files. */
  get components(): ComponentInfo[] {
    return this.processes.map((p) => ({ name: p.name as ComponentName, pid: p.pid, logPath: p.logPath }));
  }

  /**
   * Starts every component and waits until the plane is usable: /readyz, the `default` namespace,
   * and in the `cluster` profile Ready nodes and the `default` ServiceAccount. Then installs CRDs.
   */
  async start(): Promise<this> {
    if (this.started) throw new ControlPlaneError("This control plane was already started");
    this.started = true;
    const assets = await ensureAssets(this.neededBinaries(), {
      ...this.options.assets,
      kubernetesVersion: this.kubernetesVersion,
    });
    this.prepareDir();
    track(this.disposable, this.options.handleSignals ?? true);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.startOnce(assets.binaries, assets.kwokStages);
        break;
      } catch (error) {
        const portClash = this.processes.some((p) => /address already in use/i.test(p.tail(60)));
        await this.stopProcesses();
        if (portClash && attempt < START_ATTEMPTS) continue;
        // The logs are the evidence: keep them, remove everything else.
        this.keepLogs = true;
        await this.stop();
        throw error;
      }
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
    const index = this.processes.findIndex((p) => p.name === "kube-apiserver");
    const old = this.processes[index];
    if (!old) throw new ControlPlaneError("kube-apiserver is not running");
    await old.stop();
    const fresh = new ManagedProcess({
      name: "kube-apiserver",
      binary: old.binary,
      args: this.apiServerArgs,
      logPath: old.logPath,
      cwd: this.dir,
    });
    this.processes[index] = fresh;
    this.writePids();
    await waitFor(
      "kube-apiserver to pass /readyz after a restart",
      async () => (await this.admin().get("/readyz")).status === 200,
      {
        timeoutMs: DEFAULT_START_TIMEOUT_MS,
        abortIf: () => this.abortIfExited([fresh]),
      },
    );
  }

  /**
   * Compacts etcd's history up to now, so watches and lists from an older resourceVersion get
   * 410 Gone (for resources the API server does not serve from its watch cache, see
   * `--watch-cache-sizes`). Returns the compacted revision.
   */
  async compactEtcd(): Promise<number> {
    const post = async (path: string, body: object) => {
      const response = await fetch(`${this.etcdUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
      if (!response.ok)
        throw new ControlPlaneError(`etcd ${path} failed: HTTP ${response.status} ${await response.text()}`);
      return (await response.json()) as { header?: { revision?: string } };
    };
    const revision = Number(
      (await post("/v3/kv/range", { key: Buffer.from("/").toString("base64") })).header?.revision,
    );
    await post("/v3/kv/compaction", { revision: String(revision), physical: true });
    return revision;
  }

  /**
   * A kubeconfig for another user, signed by the plane's CA, for testing what RBAC lets a user do.
   * The user has no permissions until you bind a role to it (unless a group grants some).
   */
  addUser(user: string, groups: string[] = []): UserCredentials {
    const ca = this.require(this.ca, "addUser");
    const cert = ca.issueClient({ user, groups });
    const kubeconfigPath = join(this.dir, "users", `${user.replace(/[^\w.-]/g, "_")}.kubeconfig`);
    mkdirSync(join(this.dir, "users"), { recursive: true });
    writeFileSync(
      kubeconfigPath,
      renderKubeconfig({
        server: this.server,
        caCert: ca.cert,
        clientCert: cert.cert,
        clientKey: cert.key,
        userName: user,
      }),
      { mode: 0o600 },
    );
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
    const ca = this.require(this.ca, "serviceAccountUser");
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`;
    const minted = await this.admin().post<{ status?: { token?: string }; message?: string }>(path, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: options.expirationSeconds ?? 3600 },
    });
    const token = minted.body?.status?.token;
    if (minted.status !== 201 || !token) {
      throw new ControlPlaneError(
        `Could not mint a token for ServiceAccount ${namespace}/${name} (HTTP ${minted.status}): ` +
          `${minted.body?.message ?? minted.text}. Create the ServiceAccount first.`,
      );
    }
    const user = `system:serviceaccount:${namespace}:${name}`;
    const kubeconfigPath = join(this.dir, "users", `${namespace}.${name}.kubeconfig`);
    mkdirSync(join(this.dir, "users"), { recursive: true });
    writeFileSync(
      kubeconfigPath,
      renderKubeconfig({ server: this.server, caCert: ca.cert, token, userName: user }),
      { mode: 0o600 },
    );
    return {
      user,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
      kubeconfigPath,
      token,
    };
  }

  /** Ends every process (in reverse start order) and removes the plane's files. Safe to call twice. */
  stop(): Promise<void> {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async stopOnce(): Promise<void> {
    await this.stopProcesses();
    this.http?.close();
    this.removeFiles();
    untrack(this.disposable);
  }

  private neededBinaries(): BinaryName[] {
    const base: BinaryName[] = ["etcd", "kube-apiserver"];
    if (this.profile === "cluster") base.push("kube-controller-manager", "kube-scheduler", "kwok");
    return base;
  }

  private prepareDir(): void {
    if (this.options.dir) {
      this.dirPath = resolve(this.options.dir);
      mkdirSync(this.dirPath, { recursive: true });
    } else {
      this.dirPath = mkdtempSync(join(tmpdir(), "kubeloop-"));
      this.ownsDir = true;
    }
    for (const sub of ["pki", "logs"]) mkdirSync(join(this.dirPath, sub), { recursive: true });
    const removeOnOrphan = this.ownsDir
      ? [this.dirPath]
      : [join(this.dirPath, "etcd"), join(this.dirPath, "pki")];
    writeFileSync(this.pidFile(), "");
    startWatchdog(this.pidFile(), removeOnOrphan);
  }

  private async startOnce(binaries: Partial<Record<BinaryName, string>>, kwokStages: string | undefined) {
    const dir = this.dir;
    const timeoutMs = this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const remaining = () => Math.max(1000, deadline - Date.now());
    const [etcdPort, peerPort, apiPort, kcmPort, schedulerPort, kwokPort] = (await freePorts(6)) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    this.serverUrl = `https://${HOST}:${apiPort}`;
    const pki = this.writePki();
    const kubeconfigPath = this.kubeconfigPath;
    this.http?.close();
    this.http = new AdminHttp({
      server: this.server,
      caCert: pki.caCert,
      clientCert: pki.adminCert,
      clientKey: pki.adminKey,
    });

    rmSync(join(dir, "etcd"), { recursive: true, force: true });
    const etcdUrl = `http://${HOST}:${etcdPort}`;
    this.etcdClientUrl = etcdUrl;
    const etcd = this.spawn("etcd", binaries.etcd, [
      "--name=kubeloop",
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://${HOST}:${peerPort}`,
      `--initial-advertise-peer-urls=http://${HOST}:${peerPort}`,
      `--initial-cluster=kubeloop=http://${HOST}:${peerPort}`,
      // A test plane's data is disposable: skipping fsync makes every write several times faster.
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ]);
    await waitFor("etcd to be healthy", () => probe(`${etcdUrl}/health`), {
      timeoutMs: remaining(),
      abortIf: () => this.abortIfExited([etcd]),
    });

    const apiArgs = [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${HOST}`,
      `--advertise-address=${HOST}`,
      `--secure-port=${apiPort}`,
      `--cert-dir=${join(dir, "pki")}`,
      `--tls-cert-file=${pki.servingCertPath}`,
      `--tls-private-key-file=${pki.servingKeyPath}`,
      `--client-ca-file=${pki.caPath}`,
      `--service-account-issuer=${this.server}`,
      `--service-account-key-file=${pki.saPublicPath}`,
      `--service-account-signing-key-file=${pki.saPrivatePath}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--allow-privileged=true",
      // Hardened clusters authorize kubelets by the Node authorizer, which NodeRestriction pairs with.
      this.hardened ? "--authorization-mode=Node,RBAC" : "--authorization-mode=RBAC",
      // The `kubernetes` Service would point at 127.0.0.1, which the endpoint reconciler rejects loudly.
      "--endpoint-reconciler-type=none",
      "--profiling=false",
    ];
    // Without a controller manager nobody creates ServiceAccounts, and admission would reject Pods.
    if (this.profile === "apiserver") apiArgs.push("--disable-admission-plugins=ServiceAccount");
    if (this.hardened) apiArgs.push(...hardenedApiServerArgs(dir));
    this.apiServerArgs = [...apiArgs, ...(this.options.apiServerArgs ?? [])];
    const apiserver = this.spawn("kube-apiserver", binaries["kube-apiserver"], this.apiServerArgs);
    const watched = [etcd, apiserver];
    await waitFor(
      "kube-apiserver to pass /readyz",
      async () => (await this.admin().get("/readyz")).status === 200,
      {
        timeoutMs: remaining(),
        abortIf: () => this.abortIfExited(watched),
      },
    );
    await waitFor(
      "the default namespace",
      async () => (await this.admin().get("/api/v1/namespaces/default")).status === 200,
      { timeoutMs: remaining(), abortIf: () => this.abortIfExited(watched) },
    );
    if (this.profile !== "cluster") return;

    const common = [
      `--kubeconfig=${kubeconfigPath}`,
      `--authentication-kubeconfig=${kubeconfigPath}`,
      `--authorization-kubeconfig=${kubeconfigPath}`,
      "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
      // A single instance: skipping the election saves the lease's acquire delay.
      "--leader-elect=false",
      `--bind-address=${HOST}`,
    ];
    watched.push(
      this.spawn("kube-controller-manager", binaries["kube-controller-manager"], [
        ...common,
        `--secure-port=${kcmPort}`,
        `--cert-dir=${join(dir, "pki", "kcm")}`,
        `--root-ca-file=${pki.caPath}`,
        `--service-account-private-key-file=${pki.saPrivatePath}`,
        `--cluster-signing-cert-file=${pki.caPath}`,
        `--cluster-signing-key-file=${pki.caKeyPath}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
      ]),
      this.spawn("kube-scheduler", binaries["kube-scheduler"], [
        ...common,
        `--secure-port=${schedulerPort}`,
        `--cert-dir=${join(dir, "pki", "scheduler")}`,
      ]),
      this.spawn("kwok", binaries.kwok, [
        `--kubeconfig=${kubeconfigPath}`,
        `--config=${this.kwokConfig(this.require(kwokStages, "kwok stages"))}`,
        "--manage-all-nodes=true",
        `--cidr=${POD_CIDR}`,
        `--node-ip=${HOST}`,
        "--node-lease-duration-seconds=40",
        `--server-address=${HOST}:${kwokPort}`,
      ]),
    );
    const abortIf = () => this.abortIfExited(watched);
    const nodes = this.options.nodes ?? DEFAULT_NODES;
    for (let i = 0; i < nodes; i++) await this.createNode(`kwok-node-${i}`);
    await waitFor(`${nodes} node(s) to be Ready`, () => this.nodesReady(nodes), {
      timeoutMs: remaining(),
      abortIf,
    });
    await waitFor(
      "the default ServiceAccount (created by kube-controller-manager)",
      async () =>
        (await this.admin().get("/api/v1/namespaces/default/serviceaccounts/default")).status === 200,
      { timeoutMs: remaining(), abortIf },
    );
    await waitFor(
      "kube-controller-manager and kube-scheduler to be healthy",
      async () =>
        (await probe(`https://${HOST}:${kcmPort}/healthz`)) &&
        (await probe(`https://${HOST}:${schedulerPort}/healthz`)),
      { timeoutMs: remaining(), abortIf },
    );
  }

  /** kwok's stages: the defaults, or with `podBehaviours` the composed set in the plane's folder. */
  private kwokConfig(defaultsPath: string): string {
    const behaviours = this.options.podBehaviours ?? [];
    if (behaviours.length === 0) return defaultsPath;
    const path = join(this.dir, "kwok-stages.yaml");
    writeFileSync(path, composeKwokStages(readFileSync(defaultsPath, "utf8"), behaviours));
    return path;
  }

  private writePki() {
    const pkiDir = join(this.dir, "pki");
    const ca = CertificateAuthority.create("kubeloop-ca");
    this.ca = ca;
    const serving = ca.issueServing({
      commonName: "kube-apiserver",
      dnsNames: [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
      ],
      ipAddresses: [HOST, KUBERNETES_SERVICE_IP],
    });
    const admin = ca.issueClient({ user: "kubeloop-admin", groups: ["system:masters"] });
    const sa = generateKeyPair();
    const files = {
      caPath: join(pkiDir, "ca.crt"),
      caKeyPath: join(pkiDir, "ca.key"),
      servingCertPath: join(pkiDir, "apiserver.crt"),
      servingKeyPath: join(pkiDir, "apiserver.key"),
      saPublicPath: join(pkiDir, "sa.pub"),
      saPrivatePath: join(pkiDir, "sa.key"),
    };
    writeFileSync(files.caPath, ca.cert);
    writeFileSync(files.caKeyPath, ca.privateKeyPem(), { mode: 0o600 });
    writeFileSync(files.servingCertPath, serving.cert);
    writeFileSync(files.servingKeyPath, serving.key, { mode: 0o600 });
    writeFileSync(files.saPublicPath, sa.publicKey);
    writeFileSync(files.saPrivatePath, sa.privateKey, { mode: 0o600 });
    writeFileSync(
      this.kubeconfigPath,
      renderKubeconfig({
        server: this.server,
        caCert: ca.cert,
        clientCert: admin.cert,
        clientKey: admin.key,
      }),
      { mode: 0o600 },
    );
    return { ...files, caCert: ca.cert, adminCert: admin.cert, adminKey: admin.key };
  }

  private spawn(name: ComponentName, binary: string | undefined, args: string[]): ManagedProcess {
    const proc = new ManagedProcess({
      name,
      binary: this.require(binary, `${name} binary`),
      args,
      logPath: join(this.dir, "logs", `${name}.log`),
      cwd: this.dir,
    });
    this.processes.push(proc);
    this.writePids();
    return proc;
  }

  /** Throws a clear error when a component died while we waited on it. */
  private abortIfExited(watched: ManagedProcess[]): void {
    const dead = watched.find((p) => p.hasExited);
    if (!dead) return;
    const hint = diagnoseBinary(dead.binary, dead.exitStatus);
    const tail = dead.tail(25);
    throw new ControlPlaneError(
      `${dead.name} ${dead.describeExit()} while the control plane was starting.` +
        (tail
          ? `\nLast lines of ${dead.logPath}:\n${quoteLog(tail)}`
          : ` Its log (${dead.logPath}) is empty.`) +
        hint,
      { component: dead.name, logTail: tail },
    );
  }

  private async createNode(name: string): Promise<void> {
    const resources = { cpu: "32", memory: "256Gi", pods: "110" };
    const response = await this.admin().post("/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name,
        // kwok manages every node, but the annotation documents that this one is simulated.
        annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
        labels: {
          "kubernetes.io/arch": "amd64",
          "kubernetes.io/hostname": name,
          "kubernetes.io/os": "linux",
          "kubernetes.io/role": "agent",
          "node-role.kubernetes.io/agent": "",
          type: "kwok",
        },
      },
      status: { allocatable: resources, capacity: resources },
    });
    if (response.status !== 201 && response.status !== 409) {
      throw new ControlPlaneError(`Could not create node ${name}: HTTP ${response.status} ${response.text}`);
    }
  }

  private async nodesReady(count: number): Promise<boolean> {
    const list = await this.admin().get<{
      items: { status?: { conditions?: { type: string; status: string }[] } }[];
    }>("/api/v1/nodes");
    if (list.status !== 200) return false;
    const ready = list.body.items.filter((node) =>
      node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    );
    return ready.length >= count;
  }

  private async stopProcesses(): Promise<void> {
    // Reverse start order: clients of the API server first, etcd last, so nothing logs a dead peer.
    const [etcd, apiserver, ...rest] = this.processes;
    await Promise.all(rest.map((p) => p.stop()));
    if (apiserver) await apiserver.stop();
    if (etcd) await etcd.stop();
    this.processes = [];
    this.writePids();
  }

  private removeFiles(): void {
    const dir = this.dirPath;
    if (!dir) return;
    rmSync(this.pidFile(), { force: true });
    if (this.ownsDir && !this.keepLogs) {
      rmSync(dir, { recursive: true, force: true });
    } else {
      for (const entry of [
        "etcd",
        "pki",
        "users",
        "kubeconfig",
        "admission.yaml",
        "audit-policy.yaml",
        "kwok-stages.yaml",
      ])
        rmSync(join(dir, entry), { recursive: true, force: true });
    }
  }

  private disposeNow(): void {
    for (const p of this.processes) p.killNow();
    this.processes = [];
    try {
      this.removeFiles();
    } catch {
      // Best effort in an exit handler; the watchdog finishes the job.
    }
  }

  private pidFile(): string {
    return join(this.dir, "pids");
  }

  private writePids(): void {
    if (!this.dirPath) return;
    const pids = this.processes.map((p) => p.pid).filter((pid): pid is number => pid !== undefined);
    try {
      writeFileSync(this.pidFile(), pids.map((pid) => `${pid}\n`).join(""));
    } catch {
      // The folder is already gone (stopped).
    }
  }

  private admin(): AdminHttp {
    return this.require(this.http, "API access");
  }

  private require<T>(value: T | undefined, what: string): T {
    if (value === undefined)
      throw new ControlPlaneError(`${what} is not available: start() the control plane first`);
    return value;
  }
}

/**
 * Explains an early exit that is the binary's fault rather than the component's: missing, not a
 * program (a partial download, a text file), or crashing before it logs anything.
 */
function diagnoseBinary(path: string, exit: Exit | undefined): string {
  const rebuild =
    "Delete it and run `npx kubeloop assets build` (or start again, which rebuilds what is missing).";
  if (exit?.error?.code === "ENOENT") return `\n${path} does not exist.`;
  if (exit?.error?.code === "EACCES") return `\n${path} is not executable (chmod +x it, or rebuild it).`;
  const magic = Buffer.alloc(4);
  try {
    const fd = openSync(path, "r");
    readSync(fd, magic, 0, 4, 0);
    closeSync(fd);
  } catch {
    return `\n${path} cannot be read.`;
  }
  const isProgram = PROGRAM_MAGIC.some((m) => magic.subarray(0, m.length).equals(m));
  if (!isProgram) return `\n${path} is not a program (corrupt, or not a binary at all). ${rebuild}`;
  if (exit?.signal && CRASH_SIGNALS.has(exit.signal)) {
    return `\n${path} crashed (${exit.signal}); it may be truncated or built for another machine. ${rebuild}`;
  }
  return "";
}

/** ELF (Linux), Mach-O (macOS, both byte orders), and scripts. */
const PROGRAM_MAGIC = [
  Buffer.from([0x7f, 0x45, 0x4c, 0x46]),
  Buffer.from([0xcf, 0xfa, 0xed, 0xfe]),
  Buffer.from([0xfe, 0xed, 0xfa, 0xcf]),
  Buffer.from("#!"),
];
const CRASH_SIGNALS = new Set<string>(["SIGSEGV", "SIGBUS", "SIGILL", "SIGABRT", "SIGTRAP"]);

/** True when `url` answers 200. Health endpoints of local components use self-signed certificates. */
function probe(url: string): Promise<boolean> {
  return new Promise((resolveProbe) => {
    const get = url.startsWith("https:") ? httpsGet : httpGet;
    const req = get(url, { rejectUnauthorized: false, timeout: 2000 }, (res) => {
      res.resume();
      resolveProbe(res.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolveProbe(false));
  });
}
