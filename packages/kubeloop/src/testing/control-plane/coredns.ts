import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ManagedProcess } from "../process.js";
import { type Component, HOST, probe, type StartContext } from "./component.js";

export interface CoreDnsConfig {
  kubeconfigPath: string;
  /** The plane's host address on its bridge, which pods use as their nameserver (port 53). */
  listen: string;
  /** Its readiness endpoint, on loopback. */
  readyPort: number;
}

/**
 * CoreDNS (node profile) as the cluster's DNS: Services and pods under `cluster.local`, from the
 * API server. It runs on the host, on the plane's bridge address, so pods reach it as they reach
 * the API server. There is no `forward`: names outside the cluster do not resolve, and no query
 * leaves the machine.
 */
export class CoreDns implements Component {
  readonly name = "coredns";

  constructor(private readonly config: CoreDnsConfig) {}

  corefile(): string {
    return `.:53 {
    bind ${this.config.listen}
    errors
    ready ${HOST}:${this.config.readyPort}
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig ${this.config.kubeconfigPath}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
}
`;
  }

  start(context: StartContext): ManagedProcess {
    const path = join(context.dir, "Corefile");
    writeFileSync(path, this.corefile());
    return context.spawn(this.name, ["-conf", path]);
  }

  /** `ready` answers once the kubernetes plugin has synced with the API server. */
  async ready(context: StartContext): Promise<void> {
    await context.waitUntil("CoreDNS to be ready", () =>
      probe(`http://${HOST}:${this.config.readyPort}/ready`),
    );
  }
}
