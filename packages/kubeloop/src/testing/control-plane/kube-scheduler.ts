import { join } from "node:path";
import type { ManagedProcess } from "../process.js";
import { apiClientArgs, type Component, HOST, probe, type StartContext } from "./component.js";

/** kube-scheduler (cluster profile): puts Pods on kwok's fake nodes. */
export class KubeScheduler implements Component {
  readonly name = "kube-scheduler";

  constructor(private readonly config: { kubeconfigPath: string; port: number }) {}

  args(dir: string): string[] {
    return apiClientArgs(this.config.kubeconfigPath, this.config.port, join(dir, "pki", "scheduler"));
  }

  start(context: StartContext): ManagedProcess {
    return context.spawn(this.name, this.args(context.dir));
  }

  ready(context: StartContext): Promise<void> {
    return context.waitUntil("kube-scheduler to be healthy", () =>
      probe(`https://${HOST}:${this.config.port}/healthz`),
    );
  }
}
