import type { EnsureAssetsOptions } from "../assets/index.js";
import type { PodBehaviour } from "../kwok-stages.js";
import type { ComponentName } from "./component.js";

/** What a `ControlPlane` is started with, and what it tells about itself; defaults beside the options. */

export type { ComponentName } from "./component.js";

/**
 * Which components a `ControlPlane` runs. `apiserver` is etcd and kube-apiserver only (envtest's
 * set, seconds to start): enough for controllers that read and write objects. `cluster` adds kube-controller-manager, kube-scheduler and kwok's fake nodes, so
 * Deployments get Pods that are scheduled and become Ready: for operators that wait on rollouts.
 * `node` runs real nodes instead of kwok's (containerd, runc, the kubelet, kube-proxy, CoreDNS):
 * pods are real containers, with their own addresses, Services, DNS, volumes, logs and exec. It
 * needs root and cgroups; see docs/control-plane.md.
 */
export type Profile = "apiserver" | "cluster" | "node";

/** How a `ControlPlane` starts: its profile, Kubernetes version, CRDs, and where its files go; all optional. */
export interface ControlPlaneOptions {
  /** Default `apiserver`. */
  profile?: Profile;
  /** Nodes: kwok's fake ones in the `cluster` profile, real ones in the `node` profile. Default 1. */
  nodes?: number;
  /**
   * The folder for certificates, the kubeconfig, etcd's data and the logs. Default: a fresh folder
   * under the system temp dir, removed by `stop()` (but for `logs/` when `start()` failed, so the
   * error's log paths can be read). A folder you give is emptied by `stop()` except for `logs/`.
   */
  dir?: string;
  /** CRD files or folders to install once the API server is ready. */
  crds?: string[];
  /** Where binaries come from and whether to build missing ones; see `ensureAssets` (assets/). */
  assets?: EnsureAssetsOptions;
  /**
   * The Kubernetes release to run: a supported minor (`"1.33"`) or an exact release. Default:
   * `$KUBELOOP_K8S_VERSION`, else the newest supported (docs/compatibility.md lists them). Each
   * version's binaries are built once and cached side by side.
   */
  kubernetesVersion?: string;
  /**
   * Run the API server as hardened clusters do (OpenShift, CIS-benchmarked distributions), with
   * either profile: owner-reference permission enforcement, Pod Security `restricted` enforced on
   * every namespace, AlwaysPullImages, NodeRestriction, EventRateLimit, anonymous requests refused,
   * and an audit log ({@link ControlPlane.auditLogPath}). See control-plane/hardened.ts. Default false.
   *
   * @example
   * ```ts
   * const plane = await new ControlPlane({ profile: "cluster", hardened: true }).start();
   * ```
   */
  hardened?: boolean;
  /**
   * Pods on the `cluster` profile's fake nodes that misbehave on purpose (never Ready, crash-looping,
   * Ready after a delay), selected by image tag or label; every other pod becomes Ready at once.
   * See kwok-stages.ts.
   *
   * @example
   * ```ts
   * const plane = await new ControlPlane({
   *   profile: "cluster",
   *   podBehaviours: [{ pods: { imageTagContains: "broken" }, behaviour: "never-ready" }],
   * }).start();
   * ```
   */
  podBehaviours?: PodBehaviour[];
  /** Extra kube-apiserver flags (`--flag=value`), appended after ours so they win. */
  apiServerArgs?: string[];
  /** Time allowed for each start attempt. Default 90 s (a cold cluster profile on 2 busy cores). */
  startTimeoutMs?: number;
  /**
   * Kill the plane on SIGINT/SIGTERM/SIGHUP before the process goes (default true). Set false when
   * the caller handles signals itself and calls `stop()`.
   */
  handleSignals?: boolean;
}

/** A running component of the plane, as `plane.components` lists them: where to look when one fails. */
export interface ComponentInfo {
  /** `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler` or `kwok`. */
  name: ComponentName;
  /** Its process id; undefined when it could not be spawned. */
  pid: number | undefined;
  /** Its log file (stdout and stderr); a failed start's error names it. */
  logPath: string;
}

/**
 * A user of the plane made by `addUser` or `serviceAccountUser`, to test what an operator may do
 * under its RBAC rather than as cluster admin.
 */
export interface UserCredentials {
  /** The name the API server authenticates: as given to `addUser`, or `system:serviceaccount:<ns>:<name>`. */
  user: string;
  /** The groups it belongs to, which RBAC bindings can name. */
  groups: string[];
  /** A kubeconfig that acts as this user: give it to a `Client` or `kubectl`. */
  kubeconfigPath: string;
}

/** Namespace readiness is quick; a cold kube-apiserver on 2 cores takes 5–15 s to pass /readyz. */
export const DEFAULT_START_TIMEOUT_MS = 90_000;
export const DEFAULT_NODES = 1;
