import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { BinaryName } from "../assets/index.js";
import { ControlPlaneError } from "../errors.js";
import type { ManagedProcess } from "../process.js";
import { probe, type StartContext } from "./component.js";
import { type PlanePki, writeKubeconfig } from "./credentials.js";
import {
  cniConfig,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
  type NodePaths,
  nodePaths,
  registryHosts,
} from "./node-configs.js";
import type { NodeAddresses, PlaneNetwork } from "./node-network.js";

/**
 * One real node of the `node` profile: a network namespace (node-network.ts) and a mount namespace
 * of its own, held by a small process; containerd, the kubelet and kube-proxy run inside both.
 *
 * The private mount namespace is what makes a node leave nothing behind: /run and /var/lib are
 * tmpfs there (containerd's state, shim sockets, pods' network namespace files, CNI caches), and
 * every overlay and volume mount lives and dies with it. /tmp is the plane's own `tmp/`, which the
 * controller manager's host-path provisioner sees too, so PersistentVolumes stay in the plane's folder.
 */

const CGROUP_FS = "/sys/fs/cgroup";

export interface NodeBinaries {
  binaries: Partial<Record<BinaryName, string>>;
}

export interface RealNodeConfig {
  name: string;
  index: number;
  planeDir: string;
  network: PlaneNetwork;
  addresses: NodeAddresses;
  pki: PlanePki;
  apiServerUrl: string;
  binaries: Partial<Record<BinaryName, string>>;
  /** `host:port` of the plane's registry, which containerd pulls from over HTTP. */
  registry: string | undefined;
}

export class RealNode {
  readonly paths: NodePaths;
  /** The node's cgroup under every hierarchy, where the kubelet puts its pods. */
  readonly cgroupRoot: string;
  private holder: ManagedProcess | undefined;

  constructor(private readonly config: RealNodeConfig) {
    this.paths = nodePaths(join(config.planeDir, "nodes", config.name));
    this.cgroupRoot = `/kubeloop/${config.network.block}/${config.name}`;
  }

  get name(): string {
    return this.config.name;
  }

  get ip(): string {
    return this.config.addresses.ip;
  }

  /** Writes the node's files, then starts the holder, containerd, the kubelet and kube-proxy. */
  start(context: StartContext): void {
    const { name } = this.config;
    this.writeFiles();
    createCgroup(this.cgroupRoot);
    this.holder = context.spawnCommand(`node-${name}`, "nsenter", [
      `--net=/run/netns/${this.config.addresses.netns}`,
      "--",
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "--",
      "sh",
      "-c",
      HOLDER_SCRIPT,
      "kubeloop-node",
      join(this.config.planeDir, "tmp"),
      join(this.paths.dir, "resolv.conf"),
    ]);
  }

  /** Starts the node's daemons once the holder has made the namespace; resolves when the node is Ready. */
  async startDaemons(context: StartContext, beforeKubelet: () => void): Promise<void> {
    const holder = this.require(this.holder);
    await context.waitUntil(`node ${this.name}'s namespaces`, async () =>
      existsSync(join(this.config.planeDir, "tmp", `.node-${holder.pid}`)),
    );
    const { binaries } = this.config;
    const enter = (
      name: `${"containerd" | "kubelet" | "kube-proxy"}-${string}`,
      binary: BinaryName,
      args: string[],
    ) =>
      context.spawnCommand(
        name,
        "nsenter",
        ["-t", String(holder.pid), "-m", "-n", "--", this.binary(binary), ...args],
        { ...process.env, PATH: nodePath(binaries) },
      );
    enter(`containerd-${this.name}`, "containerd", ["--config", join(this.paths.dir, "containerd.toml")]);
    await context.waitUntil(`containerd on node ${this.name}`, async () =>
      existsSync(this.paths.containerdSocket),
    );
    beforeKubelet();
    enter(`kubelet-${this.name}`, "kubelet", [
      `--config=${join(this.paths.dir, "kubelet.json")}`,
      `--kubeconfig=${join(this.paths.dir, "kubelet.kubeconfig")}`,
      `--hostname-override=${this.name}`,
      `--node-ip=${this.ip}`,
      `--root-dir=${this.paths.kubeletRoot}`,
      `--cert-dir=${join(this.paths.dir, "pki")}`,
      "--v=1",
    ]);
    enter(`kube-proxy-${this.name}`, "kube-proxy", [`--config=${join(this.paths.dir, "kube-proxy.json")}`]);
    await context.waitUntil(`node ${this.name} to be Ready`, async () => {
      const node = await context.admin.get<NodeStatus>(`/api/v1/nodes/${this.name}`);
      return node.status === 200 && isReady(node.body);
    });
    await context.waitUntil(`kube-proxy on node ${this.name}`, () =>
      probe(`http://${this.ip}:10256/healthz`),
    );
  }

  private writeFiles(): void {
    const { paths } = this;
    const { name, pki, addresses, network } = this.config;
    for (const sub of [
      paths.cniConfDir,
      paths.cniDataDir,
      paths.kubeletRoot,
      paths.podLogsDir,
      join(paths.dir, "pki"),
    ])
      mkdirSync(sub, { recursive: true });
    mkdirSync(join(this.config.planeDir, "tmp"), { recursive: true });
    // The node's own programs (containerd resolving an image's registry) ask a resolver on the node's
    // loopback, where none listens: names outside the cluster fail at once instead of timing out
    // against the machine's resolver, which the node cannot reach.
    writeFileSync(join(paths.dir, "resolv.conf"), "nameserver 127.0.0.1\n");
    const cniBinDir = dirname(this.binary("ptp"));
    writeFileSync(
      join(paths.dir, "containerd.toml"),
      containerdConfig(paths, this.binary("runc"), cniBinDir),
    );
    writeFileSync(join(paths.cniConfDir, "10-kubeloop.conflist"), cniConfig(paths, addresses));
    if (this.config.registry) {
      const hosts = join(paths.registryHostsDir, this.config.registry);
      mkdirSync(hosts, { recursive: true });
      writeFileSync(join(hosts, "hosts.toml"), registryHosts(this.config.registry));
    }
    // The node's identity: system:node:<name>, which the Node authorizer and NodeRestriction know.
    const client = pki.ca.issueClient({ user: `system:node:${name}`, groups: ["system:nodes"] });
    writeKubeconfig(join(paths.dir, "kubelet.kubeconfig"), {
      server: this.config.apiServerUrl,
      caCert: pki.ca.cert,
      clientCert: client.cert,
      clientKey: client.key,
      userName: `system:node:${name}`,
    });
    const serving = pki.ca.issueServing({ commonName: name, dnsNames: [name], ipAddresses: [addresses.ip] });
    const servingCertPath = join(paths.dir, "pki", "kubelet.crt");
    const servingKeyPath = join(paths.dir, "pki", "kubelet.key");
    writeFileSync(servingCertPath, serving.cert);
    writeFileSync(servingKeyPath, serving.key, { mode: 0o600 });
    writeFileSync(
      join(paths.dir, "kubelet.json"),
      kubeletConfig({
        paths,
        node: addresses,
        network,
        caPath: pki.caPath,
        servingCertPath,
        servingKeyPath,
        cgroupRoot: this.cgroupRoot,
      }),
    );
    const proxy = pki.ca.issueClient({ user: "system:kube-proxy" });
    const proxyKubeconfig = join(paths.dir, "kube-proxy.kubeconfig");
    writeKubeconfig(proxyKubeconfig, {
      server: this.config.apiServerUrl,
      caCert: pki.ca.cert,
      clientCert: proxy.cert,
      clientKey: proxy.key,
      userName: "system:kube-proxy",
    });
    writeFileSync(
      join(paths.dir, "kube-proxy.json"),
      kubeProxyConfig(proxyKubeconfig, name, addresses.ip, network),
    );
  }

  private binary(name: BinaryName): string {
    const path = this.config.binaries[name];
    if (!path) throw new ControlPlaneError(`the ${name} binary is missing for node ${this.name}`);
    return path;
  }

  private require<T>(value: T | undefined): T {
    if (value === undefined) throw new ControlPlaneError(`node ${this.name} is not started`);
    return value;
  }
}

/**
 * The holder: makes the node's mount namespace (tmpfs /run and /var/lib, the plane's tmp/ as /tmp,
 * a resolv.conf of its own, everything rshared as kubelets need for mount propagation), leaves a
 * mark, and sleeps.
 */
const HOLDER_SCRIPT = `set -e
tmp="$1"
mount -t tmpfs -o mode=0755 kubeloop-run /run
mount -t tmpfs -o mode=0755 kubeloop-lib /var/lib
mount --bind "$tmp" /tmp
mount --bind "$2" /etc/resolv.conf
mount --make-rshared /
touch "/tmp/.node-$$"
exec sleep infinity`;

/** The PATH of a node's daemons: the shim beside containerd, runc, and the machine's iptables. */
function nodePath(binaries: Partial<Record<BinaryName, string>>): string {
  const dirs = (["containerd-shim-runc-v2", "runc"] as const)
    .map((binary) => binaries[binary])
    .filter((path): path is string => path !== undefined)
    .map((path) => dirname(path));
  return [
    ...new Set(dirs),
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
  ].join(":");
}

/**
 * Makes `path` in every cgroup v1 hierarchy (and the unified one), as the kubelet requires its
 * cgroup root to exist; cpuset needs its CPUs and memory nodes copied down each level.
 */
export function createCgroup(path: string): void {
  for (const hierarchy of cgroupHierarchies()) {
    let current = hierarchy;
    for (const part of path.split("/").filter(Boolean)) {
      const parent = current;
      current = join(current, part);
      if (existsSync(current)) continue;
      mkdirSync(current);
      for (const file of ["cpuset.cpus", "cpuset.mems"]) {
        const from = join(parent, file);
        if (existsSync(from)) writeFileSync(join(current, file), readFileSync(from, "utf8"));
      }
    }
  }
}

/** The mounted cgroup hierarchies (v1 controllers, and v2's when mounted). */
export function cgroupHierarchies(): string[] {
  if (existsSync(join(CGROUP_FS, "cgroup.procs"))) return [CGROUP_FS];
  return readdirSync(CGROUP_FS)
    .map((entry) => join(CGROUP_FS, entry))
    .filter((path) => existsSync(join(path, "cgroup.procs")));
}

interface NodeStatus {
  status?: { conditions?: { type: string; status: string }[] };
}

function isReady(node: NodeStatus): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}
