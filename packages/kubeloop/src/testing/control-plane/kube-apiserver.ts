import { join } from "node:path";
import type { ManagedProcess } from "../process.js";
import { type Component, HOST, SERVICE_CIDR, type StartContext } from "./component.js";
import type { PlanePki } from "./credentials.js";
import { hardenedApiServerArgs } from "./hardened.js";

export interface KubeApiServerConfig {
  etcdUrl: string;
  port: number;
  pki: PlanePki;
  /** `apiserver`: nothing creates ServiceAccounts, so ServiceAccount admission is off (as in envtest). */
  profile: "apiserver" | "cluster";
  /** The settings of hardened.ts. */
  hardened: boolean;
  /** The caller's flags, appended after ours so they win. */
  extraArgs: string[];
}

/** kube-apiserver, serving `https://127.0.0.1:<port>` with the plane's certificates. */
export class KubeApiServer implements Component {
  readonly name = "kube-apiserver";
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  private flags: string[] | undefined;

  constructor(private readonly config: KubeApiServerConfig) {
    this.url = `https://${HOST}:${config.port}`;
  }

  /** The flags; a hardened server's configuration files are written into `dir` on the way. */
  args(dir: string): string[] {
    const { pki, hardened } = this.config;
    const args = [
      `--etcd-servers=${this.config.etcdUrl}`,
      `--bind-address=${HOST}`,
      `--advertise-address=${HOST}`,
      `--secure-port=${this.config.port}`,
      `--cert-dir=${join(dir, "pki")}`,
      `--tls-cert-file=${pki.servingCertPath}`,
      `--tls-private-key-file=${pki.servingKeyPath}`,
      `--client-ca-file=${pki.caPath}`,
      `--service-account-issuer=${this.url}`,
      `--service-account-key-file=${pki.saPublicPath}`,
      `--service-account-signing-key-file=${pki.saPrivatePath}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--allow-privileged=true",
      // Hardened clusters authorize kubelets by the Node authorizer, which NodeRestriction pairs with.
      hardened ? "--authorization-mode=Node,RBAC" : "--authorization-mode=RBAC",
      // The `kubernetes` Service would point at 127.0.0.1, which the endpoint reconciler rejects loudly.
      "--endpoint-reconciler-type=none",
      "--profiling=false",
    ];
    // Without a controller manager nobody creates ServiceAccounts, and admission would reject Pods.
    if (this.config.profile === "apiserver") args.push("--disable-admission-plugins=ServiceAccount");
    if (hardened) args.push(...hardenedApiServerArgs(dir));
    return [...args, ...this.config.extraArgs];
  }

  /** Starts the server; a restart (see `ControlPlane.restartApiServer`) reuses the same flags. */
  start(context: StartContext): ManagedProcess {
    this.flags ??= this.args(context.dir);
    return context.spawn(this.name, this.flags);
  }

  /** /readyz passes and the `default` namespace exists (the first thing every test writes into). */
  async ready(context: StartContext): Promise<void> {
    await context.waitUntil(
      "kube-apiserver to pass /readyz",
      async () => (await context.admin.get("/readyz")).status === 200,
    );
    await context.waitUntil(
      "the default namespace",
      async () => (await context.admin.get("/api/v1/namespaces/default")).status === 200,
    );
  }
}
