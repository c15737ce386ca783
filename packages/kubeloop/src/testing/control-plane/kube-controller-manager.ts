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

  constructor(
    private readonly config: {
      kubeconfigPath: string;
      port: number;
      pki: PlanePki;
      /**
       * `node` profile: the plane's `tmp/`, which the controller sees as /tmp (in a mount namespace
       * of its own, like the nodes), so host-path PersistentVolumes are made in the plane's folder.
       */
      privateTmp?: string;
    },
  ) {}

  args(dir: string): string[] {
    const { pki } = this.config;
    return [
      ...apiClientArgs(this.config.kubeconfigPath, this.config.port, join(dir, "pki", "kcm")),
      `--root-ca-file=${pki.caPath}`,
      `--service-account-private-key-file=${pki.saPrivatePath}`,
      `--cluster-signing-cert-file=${pki.caPath}`,
      `--cluster-signing-key-file=${pki.caKeyPath}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      ...(this.config.privateTmp ? REAL_NODE_ARGS : []),
    ];
  }

  start(context: StartContext): ManagedProcess {
    const { privateTmp } = this.config;
    if (!privateTmp) return context.spawn(this.name, this.args(context.dir));
    return context.spawnCommand(this.name, "unshare", [
      "--mount",
      "--propagation",
      "slave",
      "--",
      "sh",
      "-c",
      'tmp="$1"; shift; mount --bind "$tmp" /tmp && exec "$@"',
      "kube-controller-manager",
      privateTmp,
      context.binary(this.name),
      ...this.args(context.dir),
    ]);
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

/**
 * With real nodes: volumes from the in-tree host-path provisioner (the default StorageClass), and
 * a node that stops reporting is NotReady after 20 s rather than 50 s, so failover shows in tests.
 */
const REAL_NODE_ARGS = ["--enable-hostpath-provisioner=true", "--node-monitor-grace-period=20s"];
