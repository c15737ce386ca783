import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ManagedProcess } from "../process.js";
import { type Component, probe, type StartContext } from "./component.js";

export interface RegistryConfig {
  /** The plane's host address on its bridge, where nodes (and their containerd) reach it. */
  host: string;
  port: number;
}

/**
 * distribution's registry (node profile): images pushed to `<host>:<port>/<name>:<tag>` are pulled
 * by every node's containerd over plain HTTP, as from any registry, so `imagePullPolicy: Always`
 * and digests work. Its storage is the plane's `registry/` folder.
 */
export class Registry implements Component {
  readonly name = "registry";

  constructor(private readonly config: RegistryConfig) {}

  /** `host:port`, the registry part of image names. */
  get address(): string {
    return `${this.config.host}:${this.config.port}`;
  }

  start(context: StartContext): ManagedProcess {
    const storage = join(context.dir, "registry");
    mkdirSync(storage, { recursive: true });
    const path = join(context.dir, "registry.yaml");
    writeFileSync(
      path,
      `version: 0.1
log:
  level: warn
  accesslog: { disabled: true }
storage:
  filesystem: { rootdirectory: ${JSON.stringify(storage)} }
  delete: { enabled: true }
http:
  addr: ${this.address}
`,
    );
    return context.spawn(this.name, ["serve", path]);
  }

  async ready(context: StartContext): Promise<void> {
    await context.waitUntil("the image registry", () => probe(`http://${this.address}/v2/`));
  }
}
