/**
 * The pinned versions of the control-plane binaries kubeloop builds and tests against.
 *
 * Kubernetes 1.36 is the release line built with Go 1.26 (the toolchain this project requires), and
 * kwok 0.8 is the kwok line that targets it. 1.36.4 is the newest 1.36 patch whose module the Go
 * checksum database verifies through the proxy (1.36.5 is not yet in sum.golang.org).
 * etcd 3.6.x is the series Kubernetes 1.36 is released with; we take its newest patch.
 */
export const KUBERNETES_VERSION = "1.36.4";
export const ETCD_VERSION = "3.6.16";
export const KWOK_VERSION = "0.8.0";

/** The oldest Go that builds all three: Kubernetes 1.36 and kwok 0.8 declare `go 1.26.0`. */
export const MINIMUM_GO = "1.26";

/** A binary the control plane runs. */
export type BinaryName = "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kwok";

/** Which pinned build (a "component") ships which binaries. */
export type ComponentName = "kubernetes" | "etcd" | "kwok";

export interface ComponentSpec {
  readonly name: ComponentName;
  readonly version: string;
  readonly binaries: readonly BinaryName[];
}

export const COMPONENTS: Readonly<Record<ComponentName, ComponentSpec>> = {
  kubernetes: {
    name: "kubernetes",
    version: KUBERNETES_VERSION,
    binaries: ["kube-apiserver", "kube-controller-manager", "kube-scheduler"],
  },
  etcd: { name: "etcd", version: ETCD_VERSION, binaries: ["etcd"] },
  kwok: { name: "kwok", version: KWOK_VERSION, binaries: ["kwok"] },
};

export function componentOf(binary: BinaryName): ComponentSpec {
  for (const spec of Object.values(COMPONENTS)) {
    if (spec.binaries.includes(binary)) return spec;
  }
  throw new Error(`unknown control-plane binary ${binary}`);
}

/** The folder name of a component's build in the asset cache, e.g. `kubernetes-v1.36.4`. */
export function componentDirName(spec: ComponentSpec): string {
  return `${spec.name}-v${spec.version}`;
}
