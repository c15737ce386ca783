import { execFileSync } from "node:child_process";
import { locateBinary } from "../assets/index.js";
import type { ControlPlane } from "../control-plane.js";
import { kubectl } from "../kubectl.js";

/** What the faults need of a `node` profile {@link ControlPlane}. */
export type ChaosPlane = Pick<
  ControlPlane,
  "kubeconfigPath" | "nodeNames" | "containerRuntimeSockets" | "stopKubelet" | "startKubelet"
>;

/** A fault could not be injected or restored: the target is missing, or the node's runtime refused. */
export class ChaosError extends Error {
  override name = "ChaosError";
}

/** Which pod a fault hits. */
export interface PodTarget {
  namespace: string;
  /** The pod's name. */
  pod: string;
}

/** The parts of a pod the faults read. */
export interface PodFacts {
  uid: string;
  node: string;
  containers: { name: string; id: string; restartCount: number }[];
}

export async function readPod(plane: ChaosPlane, target: PodTarget): Promise<PodFacts> {
  const got = await kubectl(["-n", target.namespace, "get", "pod", target.pod, "-o", "json"], {
    kubeconfig: plane.kubeconfigPath,
  });
  if (got.code !== 0) throw new ChaosError(`no pod ${name(target)}: ${got.stderr.trim()}`);
  const pod = JSON.parse(got.stdout) as {
    metadata: { uid: string };
    spec: { nodeName?: string };
    status?: { containerStatuses?: { name: string; containerID?: string; restartCount: number }[] };
  };
  if (!pod.spec.nodeName) throw new ChaosError(`pod ${name(target)} is not scheduled on a node yet`);
  return {
    uid: pod.metadata.uid,
    node: pod.spec.nodeName,
    containers: (pod.status?.containerStatuses ?? []).map((c) => ({
      name: c.name,
      // "containerd://<id>": the id containerd knows the container by.
      id: (c.containerID ?? "").replace(/^[a-z]+:\/\//, ""),
      restartCount: c.restartCount,
    })),
  };
}

/** The container a fault hits: the one named, else the pod's first; it must be running. */
export function pickContainer(facts: PodFacts, target: PodTarget, container?: string) {
  const found = container ? facts.containers.find((c) => c.name === container) : facts.containers[0];
  if (!found?.id) {
    const known = facts.containers.map((c) => c.name).join(", ") || "none yet";
    throw new ChaosError(
      `pod ${name(target)} has no running container${container ? ` named ${container}` : ""} (containers: ${known})`,
    );
  }
  return found;
}

export function name(target: PodTarget): string {
  return `${target.namespace}/${target.pod}`;
}

/** Runs the node's `ctr` in containerd's `k8s.io` namespace (where the kubelet's containers are). */
function ctr(plane: ChaosPlane, node: string, args: string[]): string {
  const index = plane.nodeNames.indexOf(node);
  const socket = plane.containerRuntimeSockets[index];
  if (index < 0 || !socket)
    throw new ChaosError(`node ${node} is not one of this plane's (${plane.nodeNames.join(", ") || "none"})`);
  const binary = locateBinary("ctr")?.path;
  if (!binary) throw new ChaosError("ctr is not in the asset cache: start a node-profile plane first");
  try {
    return execFileSync(binary, ["--address", socket, "-n", "k8s.io", ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new ChaosError(`ctr ${args.join(" ")} on ${node} failed: ${stderr.trim() || String(error)}`);
  }
}

/** The host pid of a running task (containers share the host's pid namespace on these nodes). */
export function taskPid(plane: ChaosPlane, node: string, containerId: string): number {
  for (const line of ctr(plane, node, ["tasks", "ls"]).split("\n").slice(1)) {
    const [id, pid, status] = line.trim().split(/\s+/);
    if (id === containerId) {
      if (status !== "RUNNING") throw new ChaosError(`container ${containerId} on ${node} is ${status}`);
      return Number(pid);
    }
  }
  throw new ChaosError(`container ${containerId} has no task on ${node}`);
}

/** The host pid of a pod's sandbox (pause) process, which holds the pod's network namespace. */
export function sandboxPid(plane: ChaosPlane, node: string, podUid: string): number {
  const filter = `labels."io.kubernetes.pod.uid"==${podUid},labels."io.cri-containerd.kind"==sandbox`;
  const ids = ctr(plane, node, ["containers", "ls", "-q", filter]).trim().split("\n").filter(Boolean);
  // A pod whose sandbox was recreated has an old one too: take the one that runs.
  for (const id of ids) {
    try {
      return taskPid(plane, node, id);
    } catch {}
  }
  throw new ChaosError(`pod ${podUid} has no running sandbox on ${node}`);
}

/** A pod's container (the one named, else its first) and the host pid of its running process. */
export async function runningContainer(plane: ChaosPlane, target: PodTarget, container?: string) {
  const facts = await readPod(plane, target);
  const found = pickContainer(facts, target, container);
  return { facts, container: found, pid: taskPid(plane, facts.node, found.id) };
}
