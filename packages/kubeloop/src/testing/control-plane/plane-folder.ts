import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AdminHttp } from "../http.js";
import { ProcessGroup, tempDir } from "../process.js";
import type { ComponentName, StartContext } from "./component.js";
import { componentFailure } from "./diagnosis.js";
import {
  createNodeNetwork,
  createPlaneNetwork,
  nodeAddresses,
  type PlaneNetwork,
  routeBetweenNodes,
} from "./node-network.js";
import { runTeardown, TEARDOWN_SCRIPT, writeTeardownScript } from "./node-teardown.js";
import type { Profile } from "./options.js";

/**
 * What a control plane owns on the machine besides its processes' ports: its folder, the process
 * group that removes it on every exit path, and (`node` profile) its network. control-plane.ts
 * composes the components inside these.
 */

/** What `stop()` removes from a folder it keeps (the caller's, or one whose start failed): all but logs/. */
const PLANE_FILES = [
  "etcd",
  "pki",
  "users",
  "kubeconfig",
  "admission.yaml",
  "audit-policy.yaml",
  "kwok-stages.yaml",
  "Corefile",
  "registry",
  "registry.yaml",
  "nodes",
  "tmp",
  TEARDOWN_SCRIPT,
];

/** The plane's folder and processes, from `start()` on. */
export interface Started {
  dir: string;
  group: ProcessGroup;
  /** The `node` profile's addresses, made once for every start attempt. */
  network?: PlaneNetwork;
}

export interface PlaneFolderOptions {
  /** The caller's folder, kept at stop (all but its logs/ emptied); else a fresh one, removed. */
  dir?: string;
  profile: Profile;
  handleSignals: boolean;
  /** Asked at stop: true keeps logs/ of a folder the plane made (a failed start's evidence). */
  keepLogs: () => boolean;
}

/** The folder, and the process group that guards it from now on (exit handlers, watchdog). */
export function preparePlaneFolder(options: PlaneFolderOptions): Started {
  const ownsDir = !options.dir;
  // Real nodes see the plane's tmp/ as /tmp, so the plane's own folder cannot be under /tmp.
  const dir = options.dir
    ? resolve(options.dir)
    : options.profile === "node"
      ? mkdtempSync(join("/var/tmp", "kubeloop-"))
      : tempDir("kubeloop-");
  for (const sub of ["pki", "logs"]) mkdirSync(join(dir, sub), { recursive: true });
  const group = new ProcessGroup({
    pidFile: join(dir, "pids"),
    removeOnOrphan: ownsDir ? [dir] : [join(dir, "etcd"), join(dir, "pki")],
    handleSignals: options.handleSignals,
    teardownScript: join(dir, TEARDOWN_SCRIPT),
    removeFiles: () => {
      const teardown = join(dir, TEARDOWN_SCRIPT);
      if (existsSync(teardown)) runTeardown(teardown);
      const entries = ownsDir && !options.keepLogs() ? [dir] : PLANE_FILES.map((entry) => join(dir, entry));
      for (const path of entries) rmSync(path, { recursive: true, force: true });
    },
    // Clients of the API server first, together; then the API server; etcd last, so nothing
    // logs a dead peer.
    stopOrder: ([etcd, apiServer, ...clients]) => [clients, apiServer ? [apiServer] : [], etcd ? [etcd] : []],
  });
  return { dir, group };
}

/** The plane's bridge and the nodes' namespaces, and the script that removes them on every exit path. */
export function makeNodeNetwork(started: Started, count: number): void {
  const network = createPlaneNetwork();
  started.network = network;
  // The script first: whatever fails below, stop() and the watchdog undo what was made.
  writeTeardownScript(
    started.dir,
    network,
    Array.from({ length: count }, (_, i) => nodeAddresses(network, i)),
  );
  const nodes = Array.from({ length: count }, (_, i) => createNodeNetwork(network, i));
  routeBetweenNodes(nodes);
}

/**
 * What each component's start gets: the folder, API access, and spawning and waiting bound to the
 * plane's process group (logs under logs/) and to the start's deadline.
 */
export function startContext(
  { dir, group }: Pick<Started, "dir" | "group">,
  admin: AdminHttp,
  binary: (name: ComponentName) => string,
  deadline: number,
): StartContext {
  return {
    dir,
    admin,
    spawn: (name, args) =>
      group.spawn({ name, binary: binary(name), args, logPath: join(dir, "logs", `${name}.log`), cwd: dir }),
    spawnCommand: (name, command, args, env) =>
      group.spawn({
        name,
        binary: command,
        args,
        logPath: join(dir, "logs", `${name}.log`),
        cwd: dir,
        ...(env ? { env } : {}),
      }),
    binary,
    waitUntil: (what, check) =>
      group.waitUntil(what, check, {
        timeoutMs: Math.max(1000, deadline - Date.now()),
        failure: componentFailure,
      }),
  };
}
