import { rmSync } from "node:fs";
import { join } from "node:path";
import type { ManagedProcess } from "../process.js";
import { type Component, HOST, probe, type StartContext } from "./component.js";

/** etcd, the plane's storage: one member, data in `<dir>/etcd`, fresh on every start. */
export class Etcd implements Component {
  readonly name = "etcd";
  /** The client URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  private readonly peerUrl: string;

  constructor(ports: { client: number; peer: number }) {
    this.url = `http://${HOST}:${ports.client}`;
    this.peerUrl = `http://${HOST}:${ports.peer}`;
  }

  args(dataDir: string): string[] {
    return [
      "--name=kubeloop",
      `--data-dir=${dataDir}`,
      `--listen-client-urls=${this.url}`,
      `--advertise-client-urls=${this.url}`,
      `--listen-peer-urls=${this.peerUrl}`,
      `--initial-advertise-peer-urls=${this.peerUrl}`,
      `--initial-cluster=kubeloop=${this.peerUrl}`,
      // A test plane's data is disposable: skipping fsync makes every write several times faster.
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ];
  }

  start(context: StartContext): ManagedProcess {
    const dataDir = join(context.dir, "etcd");
    rmSync(dataDir, { recursive: true, force: true });
    return context.spawn(this.name, this.args(dataDir));
  }

  ready(context: StartContext): Promise<void> {
    return context.waitUntil("etcd to be healthy", () => probe(`${this.url}/health`));
  }
}
