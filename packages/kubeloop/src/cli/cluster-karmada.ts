import { join } from "node:path";
import type { BinaryName } from "../testing/assets/index.js";
import type { Profile } from "../testing/index.js";
import { KarmadaPlane } from "../testing/servers/index.js";
import { CliError } from "./errors.js";

/**
 * `kubeloop cluster start --profile karmada --members N [--member-profile P]`: a Karmada plane
 * (docs/multi-cluster.md) with N members, `member1` … in regions `region-1` …, under the same
 * supervisor, state file, `status` and `stop` as the other profiles.
 */

/** What `cluster start|run` passes on for the karmada profile. */
export interface KarmadaFlags {
  dir: string;
  members: number;
  memberProfile: Profile;
  /** Nodes per member (cluster and node member profiles). */
  nodes: number;
}

/** A member as the state file records it, for `status` and the ready message. */
export interface MemberState {
  name: string;
  region: string;
  server: string;
  kubeconfig: string;
}

export const KARMADA_USAGE = `  --profile karmada   Karmada (its API server, aggregated API server, webhook, controller-manager
             and scheduler, built from its Go module) with member planes joined in push mode,
             member1… labelled topology.kubernetes.io/region=region-1…; the kubeconfig is
             Karmada's, the members' are printed
  --members  members of the karmada profile (default 2)
  --member-profile  apiserver (default), cluster or node: what each member runs`;

/** `--members` and `--member-profile`, checked. */
export function karmadaFlags(
  dir: string,
  nodes: number,
  members: string | undefined,
  memberProfile: string | undefined,
): KarmadaFlags {
  const count = members === undefined ? 2 : Number(members);
  if (!Number.isInteger(count) || count < 1 || count > 20)
    throw new CliError(`--members must be a whole number from 1 to 20, got "${members}"`);
  const profile = (memberProfile ?? "apiserver") as Profile;
  if (profile !== "apiserver" && profile !== "cluster" && profile !== "node")
    throw new CliError(`--member-profile must be apiserver, cluster or node, got "${memberProfile}"`);
  return { dir, members: count, memberProfile: profile, nodes };
}

/** The supervisor's Karmada plane for these flags. */
export function karmadaPlane(flags: KarmadaFlags): KarmadaPlane {
  return new KarmadaPlane({
    dir: flags.dir,
    handleSignals: false,
    memberProfile: flags.memberProfile,
    members: Array.from({ length: flags.members }, (_, i) => ({
      name: `member${i + 1}`,
      region: `region-${i + 1}`,
      nodes: flags.nodes,
    })),
  });
}

/** What the state file says of the members once the plane is ready. */
export function memberStates(plane: KarmadaPlane): MemberState[] {
  return plane.members.map((member) => ({
    name: member.name,
    region: member.region,
    server: member.plane.server,
    kubeconfig: member.plane.kubeconfigPath,
  }));
}

/** The arguments the detached supervisor gets for the karmada profile. */
export function karmadaSupervisorArgs(flags: KarmadaFlags): string[] {
  return ["--members", String(flags.members), "--member-profile", flags.memberProfile];
}

/** Binaries a Karmada plane needs: its own, its API server's (a cluster plane without nodes), the members'. */
export function karmadaBinaries(memberBinaries: BinaryName[]): BinaryName[] {
  const own: BinaryName[] = [
    "karmada-aggregated-apiserver",
    "karmada-webhook",
    "karmada-controller-manager",
    "karmada-scheduler",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
  ];
  return [...new Set([...memberBinaries, "etcd", "kube-apiserver", ...own] as BinaryName[])];
}

/** Lines for the ready message: each member's kubeconfig. */
export function describeMembers(members: MemberState[] | undefined, dir: string): string[] {
  return (members ?? []).map(
    (m) =>
      `member:     ${m.name} (region ${m.region}) ${m.server}  KUBECONFIG=${m.kubeconfig || join(dir, "members", m.name, "kubeconfig")}`,
  );
}
