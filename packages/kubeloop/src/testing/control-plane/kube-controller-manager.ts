import { join } from "node:path";
import type { ManagedProcess } from "../process.js";
import { apiClientArgs, type Component, HOST, probe, SERVICE_CIDR, type StartContext } from "./component.js";
import type { PlanePki } from "./credentials.js";

/**
 * kube-controller-manager (cluster profile): Deployments → ReplicaSets → Pods, garbage collection,
 * ServiceAccounts and their tokens, namespaces' lifecycle, CSR signing with the plane's CA.
 */
export class KubeControllerManager implements Component {
  readonly name = "kube-controller-manager";

  constructor(private readonly config: { kubeconfigPath: string; port: number; pki: PlanePki }) {}

  args(dir: string): string[] {
    const { pki } = this.config;
    return [
      ...apiClientArgs(this.config.kubeconfigPath, this.config.port, join(dir, "pki", "kcm")),
      `--root-ca-file=${pki.caPath}`,
      `--service-account-private-key-file=${pki.saPrivatePath}`,
      `--cluster-signing-cert-file=${pki.caPath}`,
      `--cluster-signing-key-file=${pki.caKeyPath}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
    ];
  }

  start(context: StartContext): ManagedProcess {
    return context.spawn(this.name, this.args(context.dir));
  }

  /** The `default` ServiceAccount exists (Pods are admitted only then) and /healthz passes. */
  async ready(context: StartContext): Promise<void> {
    await context.waitUntil(
      "the default ServiceAccount (created by kube-controller-manager)",
      async () =>
        (await context.admin.get("/api/v1/namespaces/default/serviceaccounts/default")).status === 200,
    );
    await context.waitUntil("kube-controller-manager to be healthy", () =>
      probe(`https://${HOST}:${this.config.port}/healthz`),
    );
  }
}
