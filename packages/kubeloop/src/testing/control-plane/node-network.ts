import { spawnSync } from "node:child_process";
import { ControlPlaneError } from "../errors.js";

/**
 * The network of a plane with real nodes (the `node` profile), on this machine only:
 *
 * - a bridge in the host's namespace holds the plane's host address (`10.<b>.0.1`): the API server,
 *   CoreDNS and the registry listen there, so pods reach them and nothing else does;
 * - each node is a network namespace of its own, linked to the bridge by a veth pair, with its
 *   address `10.<b>.0.<10+i>` and its pods in `10.<b>.<128+i>.0/24` (kube-proxy's rules live in
 *   the node's namespace, so several nodes and several planes never share a chain);
 * - the host routes each node's pod range to the node, and nodes route each other's;
 * - nothing is masqueraded, and one rule in the host's FORWARD chain drops whatever the bridge
 *   would send elsewhere: a pod reaches this machine and its own cluster, and no other address.
 *
 * Each plane takes the first free `b` in 100–199 by creating its bridge (the kernel refuses a
 * name that exists, so two planes starting at once never take the same range).
 */

/** The /16s planes take, as the second octet; clear of the machine's resolver (10.255.255.53). */
const FIRST_BLOCK = 100;
const BLOCKS = 100;

export interface PlaneNetwork {
  /** The second octet of the plane's 10.x.0.0/16. */
  readonly block: number;
  /** The bridge in the host's namespace, e.g. `klb100`. */
  readonly bridge: string;
  /** The host's address on the bridge, which the API server, CoreDNS and the registry bind. */
  readonly hostIp: string;
  /** The plane's whole range, e.g. `10.100.0.0/16`. */
  readonly cidr: string;
  /** Every node's pods together, e.g. `10.100.128.0/17` (kube-proxy's cluster CIDR). */
  readonly clusterCidr: string;
}

export interface NodeAddresses {
  /** The node's network namespace and host-side link name, e.g. `kl100n0`. */
  readonly netns: string;
  readonly ip: string;
  readonly podCidr: string;
}

export function nodeAddresses(network: PlaneNetwork, index: number): NodeAddresses {
  return {
    netns: `kl${network.block}n${index}`,
    ip: `10.${network.block}.0.${10 + index}`,
    podCidr: `10.${network.block}.${128 + index}.0/24`,
  };
}

/** Runs a command; throws with its output when it fails. */
function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.error || result.status !== 0) {
    const output = `${result.stderr ?? ""}${result.stdout ?? ""}`.trim();
    throw new ControlPlaneError(
      `\`${command} ${args.join(" ")}\` failed: ${result.error?.message ?? output}`,
    );
  }
  return result.stdout;
}

/** Creates the plane's bridge on the first free range, with its host address. */
export function createPlaneNetwork(): PlaneNetwork {
  const start = Math.floor(Math.random() * BLOCKS);
  for (let i = 0; i < BLOCKS; i++) {
    const block = FIRST_BLOCK + ((start + i) % BLOCKS);
    const bridge = `klb${block}`;
    const created = spawnSync("ip", ["link", "add", bridge, "type", "bridge"], { encoding: "utf8" });
    if (created.status !== 0) {
      if (/exists/i.test(created.stderr)) continue;
      throw new ControlPlaneError(`Could not create the bridge ${bridge}: ${created.stderr.trim()}`);
    }
    const network: PlaneNetwork = {
      block,
      bridge,
      hostIp: `10.${block}.0.1`,
      cidr: `10.${block}.0.0/16`,
      clusterCidr: `10.${block}.128.0/17`,
    };
    try {
      run("ip", ["addr", "add", `${network.hostIp}/24`, "dev", bridge]);
      run("ip", ["link", "set", bridge, "up"]);
      for (const rule of forwardRules(network).reverse()) run("iptables", ["-I", "FORWARD", ...rule]);
    } catch (error) {
      spawnSync("ip", ["link", "delete", bridge]);
      throw error;
    }
    return network;
  }
  throw new ControlPlaneError(
    `No free address range for another plane with real nodes (10.${FIRST_BLOCK}–${FIRST_BLOCK + BLOCKS - 1}.0.0/16 all taken): stop some planes.`,
  );
}

/**
 * The FORWARD rules of a plane (the same words add and delete them): traffic between its nodes
 * over the bridge is accepted even where the chain's policy is DROP; whatever the bridge would
 * route anywhere else is dropped, so pods reach this machine and their cluster only.
 */
export function forwardRules(network: PlaneNetwork): string[][] {
  const comment = [
    "-m",
    "comment",
    "--comment",
    `kubeloop plane ${network.block}: pods reach this machine only`,
  ];
  return [
    ["-i", network.bridge, "-o", network.bridge, ...comment, "-j", "ACCEPT"],
    ["-i", network.bridge, "!", "-o", network.bridge, ...comment, "-j", "DROP"],
  ];
}

/**
 * Makes node `index`'s namespace, links it to the bridge, and routes pods both ways. The routes to
 * the other nodes' pods are added by {@link routeBetweenNodes} once every node exists.
 */
export function createNodeNetwork(network: PlaneNetwork, index: number): NodeAddresses {
  const node = nodeAddresses(network, index);
  const inNode = (...args: string[]) => run("ip", ["-n", node.netns, ...args]);
  run("ip", ["netns", "add", node.netns]);
  run("ip", ["link", "add", node.netns, "type", "veth", "peer", "name", "eth0", "netns", node.netns]);
  run("ip", ["link", "set", node.netns, "master", network.bridge, "up"]);
  inNode("addr", "add", `${node.ip}/24`, "dev", "eth0");
  inNode("link", "set", "lo", "up");
  inNode("link", "set", "eth0", "up");
  inNode("route", "add", "default", "via", network.hostIp);
  run("ip", ["route", "add", node.podCidr, "via", node.ip, "dev", network.bridge]);
  run("ip", ["netns", "exec", node.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
  return node;
}

/** Each node routes the others' pod ranges straight to them, over the bridge. */
export function routeBetweenNodes(nodes: readonly NodeAddresses[]): void {
  for (const from of nodes) {
    for (const to of nodes) {
      if (from !== to) run("ip", ["-n", from.netns, "route", "add", to.podCidr, "via", to.ip]);
    }
  }
}
