import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { forwardRules, type NodeAddresses, type PlaneNetwork } from "./node-network.js";

/**
 * Removes everything a plane's real nodes made, as one shell script: `stop()` runs it, and so does
 * the watchdog when the plane's owner was killed (cleanup.ts), so both paths are the same code.
 *
 * It finds the nodes' processes without a pid list: every process in a node's network namespace
 * (the holder, containerd, its shims, the kubelet, kube-proxy, host-network pods) and every process
 * in the nodes' cgroups (the pods). Once they are gone, the nodes' mount namespaces (and every
 * overlay, volume and pod network namespace file in them) are gone too; what is left is the
 * namespaces' names, the bridge, the FORWARD rule and the cgroup folders, removed in that order.
 */

export const TEARDOWN_SCRIPT = "teardown-nodes.sh";

export function writeTeardownScript(
  planeDir: string,
  network: PlaneNetwork,
  nodes: readonly NodeAddresses[],
): string {
  const path = join(planeDir, TEARDOWN_SCRIPT);
  const cgroups = `/kubeloop/${network.block}`;
  const script = `#!/bin/sh
# Written by kubeloop for plane ${network.block} (${planeDir}). Safe to run more than once.
netns=${quote(nodes.map((node) => node.netns).join(" "))}
kill_all() {
  for n in $netns; do
    [ -e "/run/netns/$n" ] || continue
    want=$(stat -L -c %i "/run/netns/$n")
    for p in /proc/[0-9]*; do
      [ "$(stat -L -c %i "$p/ns/net" 2>/dev/null)" = "$want" ] && kill -9 "\${p#/proc/}" 2>/dev/null
    done
  done
  for f in $(find /sys/fs/cgroup/*${cgroups} /sys/fs/cgroup${cgroups} -name cgroup.procs 2>/dev/null); do
    for p in $(cat "$f" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  done
}
remaining() {
  for f in $(find /sys/fs/cgroup/*${cgroups} /sys/fs/cgroup${cgroups} -name cgroup.procs 2>/dev/null); do
    [ -s "$f" ] && return 0
  done
  return 1
}
for i in 1 2 3 4 5 6 7 8 9 10; do
  kill_all
  remaining || break
  sleep 0.3
done
for n in $netns; do ip netns delete "$n" 2>/dev/null; done
ip link delete ${quote(network.bridge)} 2>/dev/null
${forwardRules(network)
  .map((rule) => `while iptables -D FORWARD ${rule.map(quote).join(" ")} 2>/dev/null; do :; done`)
  .join("\n")}
for h in /sys/fs/cgroup/*${cgroups} /sys/fs/cgroup${cgroups}; do
  [ -d "$h" ] || continue
  for i in 1 2 3 4 5; do
    find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$h" ] || break
    sleep 0.3
  done
  rmdir "$(dirname "$h")" 2>/dev/null
done
# Mounts in the host's namespace under the plane's folder (none are expected: they live in the nodes').
grep -F ${quote(` ${planeDir}/`)} /proc/self/mountinfo | cut -d' ' -f5 | sort -r | while read -r m; do umount -l "$m"; done
exit 0
`;
  writeFileSync(path, script, { mode: 0o700 });
  return path;
}

/** Runs the teardown script; quick (a second or two) and synchronous, so exit handlers can call it. */
export function runTeardown(path: string): void {
  spawnSync("sh", [path], { stdio: "ignore", timeout: 30_000 });
}

function quote(value: string): string {
  return `'${value.replace(/'/g, "'\\''")}'`;
}
