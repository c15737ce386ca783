import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { BinaryName } from "../assets/index.js";
import { ControlPlaneError } from "../errors.js";
import { cgroupHierarchies } from "./node.js";

/** What the `node` profile checks on the host before it starts anything, and what it needs built. */

export const REAL_NODE_BINARIES: readonly BinaryName[] = [
  "kubelet",
  "kube-proxy",
  "pause",
  "containerd",
  "containerd-shim-runc-v2",
  "ctr",
  "runc",
  "ptp",
  "host-local",
  "loopback",
  "portmap",
  "coredns",
  "registry",
];

/** The machine's programs the nodes use, and the Debian package of each. */
const HOST_COMMANDS: Record<string, string> = {
  ip: "iproute2",
  iptables: "iptables",
  "iptables-restore": "iptables",
  nsenter: "util-linux",
  unshare: "util-linux",
  mount: "mount",
  tar: "tar",
  "dpkg-deb": "dpkg",
  ldd: "libc-bin",
};

/** The cgroup controllers the kubelet refuses to start without. */
const CONTROLLERS = ["cpu", "cpuacct", "cpuset", "memory", "pids"];

/**
 * Refuses, with what is missing and how to get it, a host where real nodes cannot run: not root,
 * no cgroups, missing programs, or a plane folder under /tmp (which the nodes see as their own).
 */
export function checkRealNodeHost(dir: string | undefined): void {
  const alternative =
    'The "cluster" profile (kwok\'s simulated nodes) needs none of this: use it where real pods are not needed.';
  if (process.platform !== "linux")
    throw new ControlPlaneError(`The "node" profile runs real containers, which needs Linux. ${alternative}`);
  if (process.getuid?.() !== 0)
    throw new ControlPlaneError(
      `The "node" profile needs root: it creates network namespaces, links, firewall rules, cgroups and mounts ` +
        `for its nodes (run the tests as root, e.g. in CI or a VM). ${alternative}`,
    );
  const hierarchies = cgroupHierarchies();
  const unified = hierarchies.length === 1 && existsSync(`${hierarchies[0]}/cgroup.controllers`);
  const missingControllers = unified
    ? []
    : CONTROLLERS.filter(
        (controller) => !hierarchies.some((path) => path.split("/").pop()?.split(",").includes(controller)),
      );
  if (hierarchies.length === 0 || missingControllers.length > 0)
    throw new ControlPlaneError(
      `The "node" profile needs cgroups mounted under /sys/fs/cgroup (${
        hierarchies.length === 0 ? "none are" : `missing: ${missingControllers.join(", ")}`
      }); the kubelet cannot limit or account pods without them. ${alternative}`,
    );
  const missing = Object.entries(HOST_COMMANDS).filter(
    ([command]) => spawnSync("sh", ["-c", `command -v ${command}`]).status !== 0,
  );
  if (missing.length > 0) {
    const packages = [...new Set(missing.map(([, pkg]) => pkg))];
    throw new ControlPlaneError(
      `The "node" profile needs ${missing.map(([command]) => command).join(", ")} on the PATH: ` +
        `apt-get install ${packages.join(" ")}. ${alternative}`,
    );
  }
  raiseInotifyInstances();
  if (dir && resolve(dir).startsWith("/tmp/"))
    throw new ControlPlaneError(
      `A "node" profile plane cannot live under /tmp (${dir}): its nodes see the plane's own tmp/ as /tmp. ` +
        "Give a folder elsewhere, e.g. under /var/tmp, or none (the default is a fresh folder under /var/tmp).",
    );
}

/**
 * Each kubelet, controller manager and container runtime holds inotify instances, and the
 * machine's default limit (128 per user) runs out with a few planes side by side: the kubelet then
 * dies with "inotify_init: too many open files". Raised as kind's known-issues page advises; a
 * limit already higher is left alone.
 */
const INOTIFY_INSTANCES = 1024;
const INOTIFY_LIMIT = "/proc/sys/fs/inotify/max_user_instances";

function raiseInotifyInstances(): void {
  try {
    if (Number(readFileSync(INOTIFY_LIMIT, "utf8")) < INOTIFY_INSTANCES)
      writeFileSync(INOTIFY_LIMIT, String(INOTIFY_INSTANCES));
  } catch {
    // Not writable here (a container, say): the kubelet's own error says what ran out.
  }
}

/** The default StorageClass: volumes from the controller manager's host-path provisioner. */
export const STORAGE_CLASS = {
  apiVersion: "storage.k8s.io/v1",
  kind: "StorageClass",
  metadata: {
    name: "standard",
    annotations: { "storageclass.kubernetes.io/is-default-class": "true" },
  },
  provisioner: "kubernetes.io/host-path",
  reclaimPolicy: "Delete",
  volumeBindingMode: "Immediate",
};
