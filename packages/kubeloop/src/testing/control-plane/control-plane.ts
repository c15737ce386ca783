import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { defaultAssetsRoot, ensureAssets, resolveKubernetesVersion } from "../assets/index.js";
import type { BinaryName } from "../assets/versions.js";
import { type CrdObject, installCrds, readCrds } from "../crds.js";
import { ControlPlaneError } from "../errors.js";
import { AdminHttp } from "../http.js";
import { validatePodBehaviours } from "../kwok-stages.js";
import { freePorts } from "../ports.js";
import { compactEtcd } from "./compaction.js";
import type { Component, ComponentName, StartContext } from "./component.js";
import { CoreDns } from "./coredns.js";
import { mintServiceAccountToken, type PlanePki, writeKubeconfig, writePlanePki } from "./credentials.js";
import { componentFailure } from "./diagnosis.js";
import { Etcd } from "./etcd.js";
import { type AuditRecord, auditLogPathIn, readAuditLog } from "./hardened.js";
import { KubeApiServer } from "./kube-apiserver.js";
import { KubeControllerManager } from "./kube-controller-manager.js";
import { KubeScheduler } from "./kube-scheduler.js";
import { Kwok } from "./kwok.js";
import { RealNode } from "./node.js";
import { PAUSE_IMAGE } from "./node-configs.js";
import { checkRealNodeHost, REAL_NODE_BINARIES, STORAGE_CLASS } from "./node-host.js";
import { type BaseImageName, baseImage, importImage, pauseImage } from "./node-images.js";
import { nodeAddresses, type PlaneNetwork } from "./node-network.js";
import {
  type ComponentInfo,
  type ControlPlaneOptions,
  DEFAULT_NODES,
  DEFAULT_START_TIMEOUT_MS,
  type Profile,
  type UserCredentials,
} from "./options.js";
import { makeNodeNetwork, preparePlaneFolder, type Started, startContext } from "./plane-folder.js";
import { Registry } from "./registry.js";

/** Port races between parallel workers are rare; three fresh tries make them vanish. */
const START_ATTEMPTS = 3;
/** What one start attempt made: its ports, certificates and components. */
interface Attempt {
  pki: PlanePki;
  admin: AdminHttp;
  etcd: Etcd;
  apiServer: KubeApiServer;
  nodes: RealNode[];
  /** The node profile's registry, `host:port`. */
  registry?: string;
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
    // Before anything is built or made: a machine that cannot run real nodes is told so at once.
    if (this.profile === "node") checkRealNodeHost(this.options.dir);
    const assets = await ensureAssets(this.neededBinaries(), {
      ...this.options.assets,
      kubernetesVersion: this.kubernetesVersion,
    });
    const started = preparePlaneFolder({
      ...(this.options.dir ? { dir: this.options.dir } : {}),
      profile: this.profile,
      handleSignals: this.options.handleSignals ?? true,
      keepLogs: () => this.keepLogs,
    });
    this.started = started;
    try {
      if (this.profile === "node") makeNodeNetwork(started, this.options.nodes ?? DEFAULT_NODES);
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
   * `whileStopped` runs once it is down and before it starts again: an outage with things to do in it.
   *
   * @example
   * ```ts
   * await member.restartApiServer({ whileStopped: () => kubectl(["scale", "nginx/web", "--replicas=3"], { kubeconfig }) });
   * ```
   */
  async restartApiServer(options: { whileStopped?: () => Promise<unknown> } = {}): Promise<void> {
    const { group } = this.folder("restartApiServer");
    const old = group.running.find((p) => p.name === "kube-apiserver");
    if (!old) throw new ControlPlaneError("kube-apiserver is not running");
    if (options.whileStopped) {
      await old.stop();
      await options.whileStopped();
    }
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

  /**
   * Loads an image archive (docker-archive or OCI layout, as `docker save`, `kubeloop build` or any
   * OCI tool writes) into every node's containerd, as `kind load image-archive` does: pods then run
   * it without a registry (its tag must not be `latest`, or pods must say `imagePullPolicy: Never`).
   * Returns the names the archive held.
   *
   * @example
   * ```ts
   * const plane = await new ControlPlane({ profile: "node" }).start();
   * await plane.loadImage("dist/operator.tar");
   * ```
   */
  async loadImage(archive: string): Promise<string[]> {
    const { nodes } = this.current("loadImage");
    if (this.profile !== "node")
      throw new ControlPlaneError('loadImage: only the "node" profile has container runtimes to load into');
    if (!existsSync(archive)) throw new ControlPlaneError(`loadImage: ${archive} does not exist`);
    const names = new Set<string>();
    for (const node of nodes) {
      for (const name of this.importInto(node, resolve(archive))) names.add(name);
    }
    return [...names];
  }

  /**
   * A base image made on this machine from Debian's packages (`tools`: busybox's shell and tools,
   * and curl; `nginx`: Debian's nginx, unprivileged, serving a welcome page on port 8080), loaded
   * into every node. Returns its name.
   */
  async loadBaseImage(name: BaseImageName): Promise<string> {
    const image = baseImage(name, this.assetsRoot());
    await this.loadImage(image.path);
    return image.ref;
  }

  /**
   * The node profile's image registry, `10.<N>.0.1:<port>` (plain HTTP): push to it from this
   * machine, and pods pull `<registry>/<name>:<tag>` from it like from any registry.
   */
  get registry(): string {
    return this.require(this.current("registry").registry, "the registry (node profile only)");
  }

  /** The nodes' names (`node-0`, …) in the `node` profile. */
  get nodeNames(): string[] {
    return (this.attempt?.nodes ?? []).map((node) => node.name);
  }

  /** The node's own address, which `kubectl get nodes -o wide` shows as its InternalIP. */
  nodeIp(name: string): string {
    const node = this.current("nodeIp").nodes.find((n) => n.name === name);
    if (!node) throw new ControlPlaneError(`no node ${name} (nodes: ${this.nodeNames.join(", ")})`);
    return node.ip;
  }

  /**
   * Stops a node's kubelet (the node goes NotReady after 20 s, and its pods are evicted after their
   * tolerations); its containers keep running, as on a node whose kubelet died.
   */
  async stopKubelet(name: string): Promise<void> {
    const { group } = this.folder("stopKubelet");
    const kubelet = group.running.find((p) => p.name === `kubelet-${name}`);
    if (!kubelet) throw new ControlPlaneError(`no kubelet runs on node ${name}`);
    await kubelet.stop();
  }

  /** Starts a stopped kubelet again (same flags); the node becomes Ready again. */
  async startKubelet(name: string): Promise<void> {
    const { group } = this.folder("startKubelet");
    const kubelet = group.running.find((p) => p.name === `kubelet-${name}`);
    if (!kubelet) throw new ControlPlaneError(`no kubelet runs on node ${name}`);
    await group.restart(kubelet);
  }

  private importInto(node: RealNode, archive: string, pinned = false): string[] {
    return importImage(
      this.require(this.nodeBinaries.ctr, "ctr binary"),
      node.paths.containerdSocket,
      archive,
      pinned,
    );
  }

  /** The nodes' containerd sockets (`ctr --address` or `crictl` reach a node's runtime through them). */
  get containerRuntimeSockets(): string[] {
    return (this.attempt?.nodes ?? []).map((node) => node.paths.containerdSocket);
  }

  private assetsRoot(): string {
    return this.options.assets?.root ?? defaultAssetsRoot();
  }

  private nodeBinaries: Partial<Record<BinaryName, string>> = {};

  private neededBinaries(): BinaryName[] {
    const base: BinaryName[] = ["etcd", "kube-apiserver"];
    if (this.profile === "cluster") base.push("kube-controller-manager", "kube-scheduler", "kwok");
    if (this.profile === "node")
      base.push("kube-controller-manager", "kube-scheduler", ...REAL_NODE_BINARIES);
    return base;
  }

  private async startOnce(
    { dir, group, network }: Started,
    binaries: Partial<Record<BinaryName, string>>,
    kwokStages: string | undefined,
  ): Promise<void> {
    const deadline = Date.now() + (this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
    const [etcdPort, peerPort, apiPort, kcmPort, schedulerPort, kwokPort, registryPort] = (await freePorts(
      7,
    )) as [number, number, number, number, number, number, number];
    const pki = writePlanePki(dir, network?.hostIp);
    const etcd = new Etcd({ client: etcdPort, peer: peerPort });
    const apiServer = new KubeApiServer({
      etcdUrl: etcd.url,
      port: apiPort,
      pki,
      profile: this.profile,
      hardened: this.hardened,
      extraArgs: this.options.apiServerArgs ?? [],
      ...(network ? { hostIp: network.hostIp } : {}),
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
    const context = startContext({ dir, group }, admin, (name) => this.binary(binaries, name), deadline);
    this.attempt = { pki, admin, etcd, apiServer, nodes: [] };

    // Each component needs the one before it; the API server's clients only the API server.
    for (const component of [etcd, apiServer]) {
      component.start(context);
      await component.ready(context);
    }
    if (this.profile === "node" && network) {
      await this.startRealNodes(context, binaries, network, {
        kcmPort,
        schedulerPort,
        dnsReadyPort: kwokPort,
        registryPort,
      });
      return;
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

  /**
   * The `node` profile after the API server: the controller manager, scheduler and CoreDNS; then
   * each node (its holder, containerd with the pause image, the kubelet, kube-proxy), and the
   * default StorageClass.
   */
  private async startRealNodes(
    context: StartContext,
    binaries: Partial<Record<BinaryName, string>>,
    network: PlaneNetwork,
    ports: { kcmPort: number; schedulerPort: number; dnsReadyPort: number; registryPort: number },
  ): Promise<void> {
    const attempt = this.current("nodes");
    const { dir, admin } = context;
    this.nodeBinaries = binaries;
    const registry = new Registry({ host: network.hostIp, port: ports.registryPort });
    attempt.registry = registry.address;
    const clients: Component[] = [
      registry,
      new KubeControllerManager({
        kubeconfigPath: this.kubeconfigPath,
        port: ports.kcmPort,
        pki: attempt.pki,
        privateTmp: join(dir, "tmp"),
      }),
      new KubeScheduler({ kubeconfigPath: this.kubeconfigPath, port: ports.schedulerPort }),
      new CoreDns({
        kubeconfigPath: this.kubeconfigPath,
        listen: network.hostIp,
        readyPort: ports.dnsReadyPort,
      }),
    ];
    mkdirSync(join(dir, "tmp"), { recursive: true });
    for (const component of clients) component.start(context);
    const count = this.options.nodes ?? DEFAULT_NODES;
    const pause = pauseImage(this.binary(binaries, "pause" as ComponentName), PAUSE_IMAGE, this.assetsRoot());
    attempt.nodes = Array.from(
      { length: count },
      (_, index) =>
        new RealNode({
          name: `node-${index}`,
          index,
          planeDir: dir,
          network,
          addresses: nodeAddresses(network, index),
          pki: attempt.pki,
          apiServerUrl: attempt.apiServer.url,
          binaries,
          registry: registry.address,
        }),
    );
    for (const node of attempt.nodes) node.start(context);
    await Promise.all(
      attempt.nodes.map((node) =>
        node.startDaemons(context, () => {
          this.importInto(node, pause, true);
        }),
      ),
    );
    for (const component of clients) await component.ready(context);
    const storageClass = await admin.post("/apis/storage.k8s.io/v1/storageclasses", STORAGE_CLASS);
    if (storageClass.status !== 201 && storageClass.status !== 409)
      throw new ControlPlaneError(`Could not create the default StorageClass: ${storageClass.text}`);
  }

  private binary(binaries: Partial<Record<BinaryName, string>>, name: ComponentName): string {
    return this.require(binaries[name as BinaryName], `${name} binary`);
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
