import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ControlPlaneError } from "../errors.js";
import type { AdminHttp } from "../http.js";
import { composeKwokStages, type PodBehaviour } from "../kwok-stages.js";
import type { ManagedProcess } from "../process.js";
import { type Component, HOST, type StartContext } from "./component.js";

/** Pod IPs kwok hands out; distinct from the Service range so the two never collide. */
const POD_CIDR = "10.244.0.0/16";

export interface KwokConfig {
  kubeconfigPath: string;
  /** kwok's own server (metrics, health). */
  port: number;
  /** The default stages shipped beside the binary (see assets/build.ts). */
  defaultStagesPath: string;
  /** Pods that misbehave on purpose; see kwok-stages.ts. */
  podBehaviours: PodBehaviour[];
  /** Fake nodes to create. */
  nodes: number;
}

/**
 * kwok (cluster profile), the fake kubelet: it manages every node, and makes their Pods Running
 * and Ready (or not, with `podBehaviours`) by its stages. The nodes are created here.
 */
export class Kwok implements Component {
  readonly name = "kwok";

  constructor(private readonly config: KwokConfig) {}

  args(dir: string): string[] {
    return [
      `--kubeconfig=${this.config.kubeconfigPath}`,
      `--config=${this.stagesPath(dir)}`,
      "--manage-all-nodes=true",
      `--cidr=${POD_CIDR}`,
      `--node-ip=${HOST}`,
      "--node-lease-duration-seconds=40",
      `--server-address=${HOST}:${this.config.port}`,
    ];
  }

  start(context: StartContext): ManagedProcess {
    return context.spawn(this.name, this.args(context.dir));
  }

  /** Creates the fake nodes and waits until kwok has made every one Ready. */
  async ready(context: StartContext): Promise<void> {
    const count = this.config.nodes;
    for (let i = 0; i < count; i++) await createFakeNode(context.admin, `kwok-node-${i}`);
    await context.waitUntil(`${count} node(s) to be Ready`, () => nodesReady(context.admin, count));
  }

  /** kwok's stages: the defaults, or with `podBehaviours` the composed set in the plane's folder. */
  private stagesPath(dir: string): string {
    const { defaultStagesPath, podBehaviours } = this.config;
    if (podBehaviours.length === 0) return defaultStagesPath;
    const path = join(dir, "kwok-stages.yaml");
    writeFileSync(path, composeKwokStages(readFileSync(defaultStagesPath, "utf8"), podBehaviours));
    return path;
  }
}

/** A Node with room for 110 Pods; kwok, managing every node, keeps it Ready. */
async function createFakeNode(admin: AdminHttp, name: string): Promise<void> {
  const resources = { cpu: "32", memory: "256Gi", pods: "110" };
  const response = await admin.post("/api/v1/nodes", {
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

async function nodesReady(admin: AdminHttp, count: number): Promise<boolean> {
  const list = await admin.get<{
    items: { status?: { conditions?: { type: string; status: string }[] } }[];
  }>("/api/v1/nodes");
  if (list.status !== 200) return false;
  const ready = list.body.items.filter((node) =>
    node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
  );
  return ready.length >= count;
}
