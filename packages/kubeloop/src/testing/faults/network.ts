import { execFileSync } from "node:child_process";
import { type Fault, injected } from "./fault.js";
import { ChaosError, type ChaosPlane, name, type PodTarget, readPod, sandboxPid } from "./runtime.js";

/** Which of a pod's traffic {@link cutNetwork} drops; its loopback always works. */
export type CutDirection = "both" | "ingress" | "egress";

const COMMENT = "kubeloop-chaos-network-cut";

/**
 * Cuts a pod off the network: DROP rules in the pod's own network namespace (entered from the
 * host through its sandbox's pid), so nothing reaches it, not even the kubelet's probes, and it
 * reaches nothing, while its processes run on. `restore()` removes the rules; a pod deleted
 * meanwhile took its namespace, and the rules, with it.
 *
 * @example
 * ```ts
 * const cut = await cutNetwork(plane, { namespace: "site", pod: "web-0" });
 * await pollUntil(async () => !(await ready("web-0")), { timeoutMs: 30_000 }); // the probe fails
 * await cut.restore();
 * const { sinceRestoreMs } = await cut.recovered(() => ready("web-0"));
 * ```
 */
export async function cutNetwork(
  plane: ChaosPlane,
  target: PodTarget & { direction?: CutDirection },
): Promise<Fault> {
  const facts = await readPod(plane, target);
  const pid = sandboxPid(plane, facts.node, facts.uid);
  const direction = target.direction ?? "both";
  const rules = [
    ...(direction === "egress" ? [] : [["INPUT", "!", "-i", "lo"]]),
    ...(direction === "ingress" ? [] : [["OUTPUT", "!", "-o", "lo"]]),
  ];
  const iptables = (action: "-I" | "-D", rule: string[]) =>
    execFileSync(
      "nsenter",
      [
        "-t",
        String(pid),
        "-n",
        "iptables",
        "-w",
        action,
        ...rule,
        "-m",
        "comment",
        "--comment",
        COMMENT,
        "-j",
        "DROP",
      ],
      { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" },
    );
  const injectedAt = Date.now();
  try {
    for (const rule of rules) iptables("-I", rule);
  } catch (error) {
    throw new ChaosError(`could not cut the network of ${name(target)}: ${stderrOf(error)}`);
  }
  return injected("network-cut", name(target), injectedAt, async () => {
    for (const rule of rules) {
      try {
        iptables("-D", rule);
      } catch (error) {
        // The sandbox ended (the pod was deleted): its namespace and rules went with it.
        if (processExists(pid))
          throw new ChaosError(`could not restore ${name(target)}'s network: ${stderrOf(error)}`);
      }
    }
  });
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function stderrOf(error: unknown): string {
  return ((error as { stderr?: string }).stderr ?? "").trim() || String(error);
}
