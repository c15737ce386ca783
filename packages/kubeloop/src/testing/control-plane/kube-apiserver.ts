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
  profile: "apiserver" | "cluster" | "node";
  /**
   * `node` profile: the plane's address on its bridge, which the server binds and advertises so
   * that pods reach it through the `kubernetes` Service (loopback is not theirs to reach).
   */
  hostIp?: string;
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
    this.url = `https://${config.hostIp ?? HOST}:${config.port}`;
  }

  /** The flags; a hardened server's configuration files are written into `dir` on the way. */
  args(dir: string): string[] {
    const { pki, hardened } = this.config;
    const host = this.config.hostIp ?? HOST;
    const args = [
      `--etcd-servers=${this.config.etcdUrl}`,
      `--bind-address=${host}`,
      `--advertise-address=${host}`,
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
      // Real and hardened clusters authorize kubelets by the Node authorizer, which NodeRestriction pairs with.
      hardened || this.config.hostIp ? "--authorization-mode=Node,RBAC" : "--authorization-mode=RBAC",
      "--profiling=false",
    ];
    if (this.config.hostIp) args.push(...realNodeArgs(pki));
    // The `kubernetes` Service would point at 127.0.0.1, which the endpoint reconciler rejects loudly.
    else args.push("--endpoint-reconciler-type=none");
    // Without a controller manager nobody creates ServiceAccounts, and admission would reject Pods.
    if (this.config.profile === "apiserver") args.push("--disable-admission-plugins=ServiceAccount");
    if (hardened) args.push(...hardenedApiServerArgs(dir));
    else if (this.config.hostIp) args.push("--enable-admission-plugins=NodeRestriction");
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

/**
 * Talking to real kubelets (logs, exec, port-forward) with a client certificate, checking theirs,
 * by their InternalIP (their names resolve nowhere); reaching webhooks and aggregated APIs at
 * their pods' addresses (the host has routes to pods, not kube-proxy's Service rules); and the
 * front proxy's identity for aggregated APIs such as metrics-server.
 */
function realNodeArgs(pki: PlanePki): string[] {
  return [
    `--kubelet-client-certificate=${pki.kubeletClientCertPath}`,
    `--kubelet-client-key=${pki.kubeletClientKeyPath}`,
    `--kubelet-certificate-authority=${pki.caPath}`,
    "--kubelet-preferred-address-types=InternalIP",
    "--enable-aggregator-routing=true",
    `--requestheader-client-ca-file=${pki.caPath}`,
    "--requestheader-allowed-names=front-proxy-client",
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${pki.frontProxyCertPath}`,
    `--proxy-client-key-file=${pki.frontProxyKeyPath}`,
  ];
}
