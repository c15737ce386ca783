import type { NodeAddresses, PlaneNetwork } from "./node-network.js";

/**
 * The configuration files of one real node: containerd's, the CNI network's, the kubelet's and
 * kube-proxy's. Pure functions of the node's folder, addresses and binaries, so they read as the
 * files they write. docs/control-plane.md explains each non-default setting.
 */

/** The sandbox image containerd is told to use; imported into every node at start (never pulled). */
export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2";
/** The CNI network's name (host-local keeps its leases under it). */
const NETWORK_NAME = "kubeloop";

export interface NodePaths {
  /** The node's folder, `<plane>/nodes/<name>`. */
  dir: string;
  containerdSocket: string;
  containerdRoot: string;
  cniConfDir: string;
  cniDataDir: string;
  registryHostsDir: string;
  kubeletRoot: string;
  podLogsDir: string;
}

export function nodePaths(dir: string): NodePaths {
  return {
    dir,
    containerdSocket: `${dir}/containerd.sock`,
    containerdRoot: `${dir}/containerd`,
    cniConfDir: `${dir}/cni`,
    cniDataDir: `${dir}/cni-leases`,
    registryHostsDir: `${dir}/certs.d`,
    kubeletRoot: `${dir}/kubelet`,
    podLogsDir: `${dir}/pod-logs`,
  };
}

/** containerd 2.x (config version 3): its own root and socket, runc with cgroupfs, our CNI. */
export function containerdConfig(paths: NodePaths, runc: string, cniBinDir: string): string {
  return `version = 3
root = ${toml(paths.containerdRoot)}
# state (and shim sockets) go to /run, a tmpfs private to the node: gone when the node is.
state = '/run/containerd'

[grpc]
  address = ${toml(paths.containerdSocket)}

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = ${toml(PAUSE_IMAGE)}
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ${toml(paths.registryHostsDir)}

  [plugins.'io.containerd.cri.v1.runtime']
    # Lowering a process's OOM score needs CAP_SYS_RESOURCE, which sandboxed machines (this one
    # among them) do not grant even to root: keep containers' scores at or above containerd's own.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = ${toml(runc)}
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [${toml(cniBinDir)}]
      conf_dir = ${toml(paths.cniConfDir)}
`;
}

/**
 * ptp links each pod to the node with a veth pair and a /32 route (no bridge, no br_netfilter);
 * `ipMasq: false`: pod traffic keeps its address, and nothing is translated to leave the machine.
 */
export function cniConfig(paths: NodePaths, node: NodeAddresses): string {
  return `${JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: NETWORK_NAME,
      plugins: [
        {
          type: "ptp",
          ipMasq: false,
          mtu: 1500,
          ipam: {
            type: "host-local",
            dataDir: paths.cniDataDir,
            ranges: [[{ subnet: node.podCidr }]],
            routes: [{ dst: "0.0.0.0/0" }],
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export interface KubeletConfigInput {
  paths: NodePaths;
  node: NodeAddresses;
  network: PlaneNetwork;
  caPath: string;
  servingCertPath: string;
  servingKeyPath: string;
  cgroupRoot: string;
}

/** The kubelet: a real node identity, webhook authentication and authorization, our DNS. */
export function kubeletConfig(input: KubeletConfigInput): string {
  const { paths, node, network } = input;
  return `${JSON.stringify(
    {
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      // This machine mounts cgroups v1 (hybrid); kubelet 1.35+ refuses that unless told otherwise.
      failCgroupV1: false,
      cgroupDriver: "cgroupfs",
      cgroupRoot: input.cgroupRoot,
      containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
      failSwapOn: false,
      address: node.ip,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: "127.0.0.1",
      healthzPort: 10248,
      tlsCertFile: input.servingCertPath,
      tlsPrivateKeyFile: input.servingKeyPath,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: input.caPath },
      },
      authorization: { mode: "Webhook" },
      clusterDNS: [network.hostIp],
      clusterDomain: "cluster.local",
      // Pods never see the machine's resolver: cluster names only.
      resolvConf: "",
      podLogsDir: paths.podLogsDir,
      // A test machine's disk is whatever it is: evict on real exhaustion only, never GC loaded images.
      evictionHard: { "memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%" },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      serializeImagePulls: false,
      // Status every 4 s, so that a stopped kubelet shows as NotReady within the controller's grace.
      nodeStatusUpdateFrequency: "4s",
      nodeStatusReportFrequency: "4s",
      rotateCertificates: false,
      maxPods: 110,
    },
    null,
    2,
  )}\n`;
}

/** kube-proxy in iptables mode, in the node's own network namespace. */
export function kubeProxyConfig(
  kubeconfigPath: string,
  nodeName: string,
  nodeIp: string,
  network: PlaneNetwork,
): string {
  return `${JSON.stringify(
    {
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
      clientConnection: { kubeconfig: kubeconfigPath },
      hostnameOverride: nodeName,
      mode: "iptables",
      clusterCIDR: network.clusterCidr,
      // On the node's address, where the plane (in the host's namespace) can probe them.
      healthzBindAddress: `${nodeIp}:10256`,
      metricsBindAddress: `${nodeIp}:10249`,
      // The conntrack table is the machine's, not the node's: leave its sysctls alone.
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
    },
    null,
    2,
  )}\n`;
}

/** containerd pulls from the plane's registry over plain HTTP (it listens on the bridge, not loopback). */
export function registryHosts(registry: string): string {
  return `server = ${toml(`http://${registry}`)}\n\n[host.${toml(`http://${registry}`)}]\n  capabilities = ['pull', 'resolve']\n`;
}

function toml(value: string): string {
  return `'${value.replace(/'/g, "")}'`;
}
