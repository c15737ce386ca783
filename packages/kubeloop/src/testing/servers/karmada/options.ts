import type { EnsureAssetsOptions } from "../../assets/index.js";
import type { ComponentInfo, Profile } from "../../control-plane/options.js";

/** A member cluster of a {@link KarmadaPlaneOptions}: a kubeloop control plane joined in push mode. */
export interface KarmadaMemberOptions {
  /** The Cluster object's name on Karmada (DNS label). */
  name: string;
  /** Its `topology.kubernetes.io/region` label and `spec.region`: what placements select it by. */
  region: string;
  /** Which plane the member is (see `Profile`). Default: the plane's `memberProfile`. */
  profile?: Profile;
  /** Nodes in a `cluster` or `node` member. Default 1. */
  nodes?: number;
  /** More labels on the Cluster object. */
  labels?: Record<string, string>;
}

/** How a `KarmadaPlane` starts; all optional. */
export interface KarmadaPlaneOptions {
  /** The members; default two, `member1` in region `region-a` and `member2` in `region-b`. */
  members?: KarmadaMemberOptions[];
  /** The profile of members that do not say: `apiserver` (default), `cluster` (kwok pods) or `node` (real pods). */
  memberProfile?: Profile;
  /**
   * The plane's folder (Karmada's API server, its processes' certificates and logs, and a folder per
   * member). Default: a fresh one under the system temp dir (under /var/tmp when a member is of the
   * `node` profile, whose nodes see their plane's tmp/ as /tmp). `stop()` removes it but for `logs/`
   * folders when a folder was given.
   */
  dir?: string;
  /** Where binaries come from; see `ensureAssets`. */
  assets?: EnsureAssetsOptions;
  /** The Kubernetes release of Karmada's API server and of the members. */
  kubernetesVersion?: string;
  /** Time allowed for each step of the start (each plane, then Karmada's processes). Default 180 s. */
  startTimeoutMs?: number;
  /** Kill everything on SIGINT/SIGTERM/SIGHUP (default true); false when the caller handles signals. */
  handleSignals?: boolean;
}

/** The members when none are given: two regions, as the smallest fleet that shows placement. */
export const DEFAULT_MEMBERS: readonly KarmadaMemberOptions[] = [
  { name: "member1", region: "region-a" },
  { name: "member2", region: "region-b" },
];

/** Karmada's own processes, as `KarmadaPlane.components` names them beside its API server's. */
export type KarmadaComponentName =
  | "karmada-aggregated-apiserver"
  | "karmada-webhook"
  | "karmada-controller-manager"
  | "karmada-scheduler";

/** One of Karmada's own processes in `KarmadaPlane.components`: its name, pid and log file. */
export interface KarmadaComponentInfo extends Omit<ComponentInfo, "name"> {
  name: KarmadaComponentName;
}

export const KARMADA_START_TIMEOUT_MS = 180_000;
