import { AssetsError } from "./errors.js";

/**
 * The pinned versions of the control-plane binaries kubeloop builds and tests against.
 *
 * Kubernetes 1.36 is the newest release line (built with Go 1.26, the toolchain this project
 * requires), and kwok 0.8 is the kwok line that targets it. 1.36.4 is the newest 1.36 patch whose
 * module the Go checksum database verifies through the proxy (1.36.5 is not yet in sum.golang.org).
 * etcd 3.6.x is the series Kubernetes 1.36 is released with; we take its newest patch.
 *
 * Older minors are supported down to {@link OLDEST_KUBERNETES_VERSION}; docs/compatibility.md says
 * why that one (what managed services still run, and what the client needs from the server).
 */
export const KUBERNETES_VERSION = "1.36.4";
/** The etcd every supported Kubernetes version runs on (see {@link componentsFor}). */
export const ETCD_VERSION = "3.6.16";
/** The kwok that fakes the `cluster` profile's nodes and pods, for every supported Kubernetes version. */
export const KWOK_VERSION = "0.8.0";

/**
 * The tools that test how an operator ships (docs/shipping.md): Helm, built from helm.sh/helm/v3 (its
 * newest v3 release on the module proxy), and operator-verify, OLM's bundle validator from
 * github.com/operator-framework/api (the newest tag the proxy serves; it is the library
 * operator-sdk's `bundle validate` calls). Neither depends on the Kubernetes version under test.
 */
export const HELM_VERSION = "3.22.0";
export const OLM_API_VERSION = "0.45.0";
/**
 * OLM v0 itself (operator-lifecycle-manager: olm-operator, catalog-operator and the utilities their
 * pods run), the newest tag the proxy serves, with the opm of the operator-registry it requires and
 * grpc-health-probe, which catalog pods are probed with. v0, not v1: it installs registry+v1
 * bundles with webhooks and issues their certificates itself, which OLM v1 does not.
 */
export const OLM_VERSION = "0.38.0";
export const GRPC_HEALTH_PROBE_VERSION = "0.4.40";

/**
 * The node stack of the `node` profile (real pods), as kind 0.31 pins it for Kubernetes 1.36:
 * containerd 2.3 (the LTS line Kubernetes 1.36 lists; Debian 12's 1.6 is past its end of life),
 * the runc that containerd release is tested with, the CNI plugins kind and local-up-cluster use,
 * the CoreDNS kubeadm 1.36 deploys, and distribution's registry for images pulled by the nodes.
 * Each is built from its Go module like the control plane; docs/control-plane.md says why not
 * Debian's packages.
 */
export const CONTAINERD_VERSION = "2.3.4";
export const RUNC_VERSION = "1.4.3";
export const CNI_PLUGINS_VERSION = "1.9.1";
export const COREDNS_VERSION = "1.14.2";
export const REGISTRY_VERSION = "3.1.1";

/**
 * Karmada, the multi-cluster engine the `karmada` plane runs (docs/multi-cluster.md): its
 * controller-manager, scheduler, webhook and aggregated API server, from github.com/karmada-io/karmada.
 * 1.18.2 is the newest release the module proxy serves whose go.mod this Go builds (go 1.25,
 * Kubernetes libraries 0.35, no `replace` lines); its API servers are the plane's own kube-apiserver.
 */
export const KARMADA_VERSION = "1.18.2";

/**
 * The oldest supported Kubernetes: 1.33 is three minors behind 1.36 and still a supported production
 * cluster in late 2026 (EKS and GKE extended support, AKS long-term support, OpenShift 4.20). Go 1.26
 * builds it unchanged, and it serves everything the client relies on (aggregated discovery v2, CEL
 * validation, ValidatingAdmissionPolicy, bookmarks); streaming lists (WatchList) are beta but off.
 */
export const OLDEST_KUBERNETES_VERSION = "1.33.13";

/**
 * The patch built for each supported minor, oldest first: the newest patch on the Go module proxy.
 * `npm run test:matrix` runs the oldest and the newest; the minors between are pinned so that
 * `KUBELOOP_K8S_VERSION=1.34` means one exact build everywhere.
 */
export const SUPPORTED_KUBERNETES_VERSIONS: readonly string[] = [
  OLDEST_KUBERNETES_VERSION,
  "1.34.4",
  "1.35.4",
  KUBERNETES_VERSION,
];

/** The environment variable that picks the Kubernetes version when no option does. */
export const KUBERNETES_VERSION_ENV = "KUBELOOP_K8S_VERSION";

/** The oldest Go that builds all three: Kubernetes 1.36 and kwok 0.8 declare `go 1.26.0`. */
export const MINIMUM_GO = "1.26";

/**
 * The exact Kubernetes version to use: `requested`, else `$KUBELOOP_K8S_VERSION`, else the newest
 * supported. A minor (`1.33`, `v1.33`) means its pinned patch; a full version (`1.33.7`) is taken as
 * is, as long as its minor is supported.
 *
 * @example
 * resolveKubernetesVersion("1.33"); // "1.33.13"
 * resolveKubernetesVersion(undefined, { KUBELOOP_K8S_VERSION: "v1.36.4" }); // "1.36.4"
 */
export function resolveKubernetesVersion(requested?: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env[KUBERNETES_VERSION_ENV]?.trim();
  const raw = requested ?? (fromEnv ? fromEnv : undefined);
  if (raw === undefined) return KUBERNETES_VERSION;
  const where = requested === undefined ? `${KUBERNETES_VERSION_ENV}=${raw}` : `"${raw}"`;
  const match = /^v?(1)\.(\d+)(?:\.(\d+))?$/.exec(raw.trim());
  const supportedMinors = SUPPORTED_KUBERNETES_VERSIONS.map(minorOf).join(", ");
  if (!match) {
    throw new AssetsError(
      `${where} is not a Kubernetes version: write a minor such as 1.33 or a release such as 1.33.13 ` +
        `(supported minors: ${supportedMinors}).`,
    );
  }
  const minor = `1.${match[2]}`;
  const pinned = SUPPORTED_KUBERNETES_VERSIONS.find((version) => minorOf(version) === minor);
  if (!pinned) {
    throw new AssetsError(
      `Kubernetes ${minor} (from ${where}) is not supported: kubeloop supports ${supportedMinors}. ` +
        "docs/compatibility.md explains the range; pick one of those.",
    );
  }
  return match[3] === undefined ? pinned : `${minor}.${match[3]}`;
}

/** `1.33.13` → `1.33`. */
export function minorOf(version: string): string {
  return version.split(".").slice(0, 2).join(".");
}

/** A binary the control plane runs. */
export type BinaryName =
  | "etcd"
  | "kube-apiserver"
  | "kube-controller-manager"
  | "kube-scheduler"
  | "kwok"
  | "helm"
  | "operator-verify"
  | "olm"
  | "catalog"
  | "copy-content"
  | "cpb"
  | "opm"
  | "grpc_health_probe"
  | "kubelet"
  | "kube-proxy"
  | "pause"
  | "containerd"
  | "containerd-shim-runc-v2"
  | "ctr"
  | "runc"
  | "ptp"
  | "host-local"
  | "loopback"
  | "portmap"
  | "coredns"
  | "registry"
  | "karmada-controller-manager"
  | "karmada-scheduler"
  | "karmada-webhook"
  | "karmada-aggregated-apiserver";

/** Which pinned build (a "component") ships which binaries. */
export type ComponentName =
  | "kubernetes"
  | "etcd"
  | "kwok"
  | "helm"
  | "olm"
  | "olm-lifecycle"
  | "kubernetes-node"
  | "containerd"
  | "runc"
  | "cni-plugins"
  | "coredns"
  | "registry"
  | "karmada";

export interface ComponentSpec {
  readonly name: ComponentName;
  readonly version: string;
  readonly binaries: readonly BinaryName[];
}

/**
 * The components for one Kubernetes version (an exact one, see {@link resolveKubernetesVersion}).
 * etcd and kwok are the same for every supported minor: etcd 3.6 serves Kubernetes 1.33 as well as
 * the 3.5 it was released with, and kwok 0.8 only talks to the API server as a client; so are helm
 * and operator-verify, which are clients too.
 */
export function componentsFor(kubernetesVersion: string): Readonly<Record<ComponentName, ComponentSpec>> {
  return {
    kubernetes: {
      name: "kubernetes",
      version: kubernetesVersion,
      binaries: ["kube-apiserver", "kube-controller-manager", "kube-scheduler"],
    },
    etcd: { name: "etcd", version: ETCD_VERSION, binaries: ["etcd"] },
    kwok: { name: "kwok", version: KWOK_VERSION, binaries: ["kwok"] },
    helm: { name: "helm", version: HELM_VERSION, binaries: ["helm"] },
    olm: { name: "olm", version: OLM_API_VERSION, binaries: ["operator-verify"] },
    "olm-lifecycle": {
      name: "olm-lifecycle",
      version: OLM_VERSION,
      binaries: ["olm", "catalog", "copy-content", "cpb", "opm", "grpc_health_probe"],
    },
    "kubernetes-node": {
      name: "kubernetes-node",
      version: kubernetesVersion,
      binaries: ["kubelet", "kube-proxy", "pause"],
    },
    containerd: {
      name: "containerd",
      version: CONTAINERD_VERSION,
      binaries: ["containerd", "containerd-shim-runc-v2", "ctr"],
    },
    runc: { name: "runc", version: RUNC_VERSION, binaries: ["runc"] },
    "cni-plugins": {
      name: "cni-plugins",
      version: CNI_PLUGINS_VERSION,
      binaries: ["ptp", "host-local", "loopback", "portmap"],
    },
    coredns: { name: "coredns", version: COREDNS_VERSION, binaries: ["coredns"] },
    registry: { name: "registry", version: REGISTRY_VERSION, binaries: ["registry"] },
    karmada: {
      name: "karmada",
      version: KARMADA_VERSION,
      binaries: [
        "karmada-controller-manager",
        "karmada-scheduler",
        "karmada-webhook",
        "karmada-aggregated-apiserver",
      ],
    },
  };
}

/** The components of the default (newest) Kubernetes version. */
export const COMPONENTS: Readonly<Record<ComponentName, ComponentSpec>> = componentsFor(KUBERNETES_VERSION);

/** The component that ships `binary`, for the given exact Kubernetes version (default: the newest). */
export function componentOf(binary: BinaryName, kubernetesVersion = KUBERNETES_VERSION): ComponentSpec {
  for (const spec of Object.values(componentsFor(kubernetesVersion))) {
    if (spec.binaries.includes(binary)) return spec;
  }
  throw new Error(`unknown control-plane binary ${binary}`);
}

/** The folder name of a component's build in the asset cache, e.g. `kubernetes-v1.36.4`. */
export function componentDirName(spec: ComponentSpec): string {
  return `${spec.name}-v${spec.version}`;
}
