import { kindKeyOf } from "../../client/index.js";
import { BUILTIN_DISCOVERY } from "./builtin-discovery.js";
import type { DiscoveryDocument } from "./discovery.js";

export type { DiscoveredResource, DiscoveryDocument } from "./discovery.js";

/**
 * The kinds the in-memory server serves: a fixed table of built-in kinds whose behaviour is
 * emulated, and the custom resources of the CRDs created on it. Discovery lists every built-in
 * kind kube-apiserver serves (builtin-discovery.json, captured from one), so a client resolves them
 * as on a cluster; requests to the ones not in this table are refused with NotEmulated.
 */

export interface ScalePaths {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface KindInfo {
  group: string;
  version: string;
  kind: string;
  /** Plural resource name, as in URLs. */
  resource: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** `status` writes go through the status subresource only. */
  status: boolean;
  scale?: ScalePaths;
  /** Whether writes to the spec count generations (`metadata.generation`). */
  generation: boolean;
  /** Whether PUT without resourceVersion is allowed (false for custom resources). */
  unconditionalUpdate: boolean;
  /** Fields a field selector may use besides metadata.name and metadata.namespace. */
  selectableFields: string[];
  /** The structural schema of a custom resource version (undefined for built-ins). */
  schema?: Record<string, unknown>;
  /** Set for custom resources: the CRD's name. */
  crd?: string;
  /**
   * Why writes through the API are refused (their defaulting and admission are not emulated);
   * reads and watches work, and tests put objects in with `MemoryApiServer.seed`.
   */
  seedOnly?: string;
  /** PUT of a missing object creates it (kube-apiserver's AllowCreateOnUpdate: leases, events, …). */
  createOnUpdate?: boolean;
  /** DELETE answers with the deleted object rather than a Status (ReturnDeletedObject). */
  deleteReturnsObject?: boolean;
  /** Set for custom resources: the version objects are stored in (requests in others are refused). */
  storageVersion?: string;
}

export const apiVersionOf = (k: { group: string; version: string }): string =>
  k.group ? `${k.group}/${k.version}` : k.version;

type Builtin = Omit<
  KindInfo,
  "singular" | "unconditionalUpdate" | "selectableFields" | "status" | "generation"
> &
  Partial<Pick<KindInfo, "selectableFields" | "status" | "generation" | "unconditionalUpdate">>;

/**
 * Event, served alike in core/v1 and events.k8s.io/v1 (one storage): the same resource, short
 * name and field selectors kube-apiserver accepts in both groups.
 */
const EVENT = {
  version: "v1",
  kind: "Event",
  resource: "events",
  namespaced: true,
  shortNames: ["ev"],
  selectableFields: [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
  ],
};

const BUILTINS: Builtin[] = [
  {
    group: "",
    version: "v1",
    kind: "Namespace",
    resource: "namespaces",
    namespaced: false,
    shortNames: ["ns"],
    status: true,
    selectableFields: ["status.phase"],
  },
  {
    group: "",
    version: "v1",
    kind: "ConfigMap",
    resource: "configmaps",
    namespaced: true,
    shortNames: ["cm"],
  },
  {
    group: "",
    version: "v1",
    kind: "Secret",
    resource: "secrets",
    namespaced: true,
    selectableFields: ["type"],
  },
  {
    group: "",
    version: "v1",
    kind: "ServiceAccount",
    resource: "serviceaccounts",
    namespaced: true,
    shortNames: ["sa"],
    deleteReturnsObject: true,
  },
  { group: "", ...EVENT },
  { group: "events.k8s.io", ...EVENT },
  {
    group: "",
    version: "v1",
    kind: "Pod",
    resource: "pods",
    namespaced: true,
    shortNames: ["po"],
    categories: ["all"],
    status: true,
    selectableFields: [
      "spec.nodeName",
      "spec.restartPolicy",
      "spec.schedulerName",
      "spec.serviceAccountName",
      "spec.hostNetwork",
      "status.phase",
      "status.podIP",
      "status.nominatedNodeName",
    ],
    seedOnly:
      "writes of pods (the ServiceAccount, DefaultTolerationSeconds and Priority admission plugins and the pod defaults they depend on)",
  },
  {
    group: "coordination.k8s.io",
    version: "v1",
    kind: "Lease",
    resource: "leases",
    namespaced: true,
    unconditionalUpdate: false,
    createOnUpdate: true,
  },
  {
    group: "apps",
    version: "v1",
    kind: "Deployment",
    resource: "deployments",
    namespaced: true,
    shortNames: ["deploy"],
    categories: ["all"],
    status: true,
    generation: true,
    scale: {
      specReplicasPath: ".spec.replicas",
      statusReplicasPath: ".status.replicas",
      labelSelectorPath: ".status.selector",
    },
  },
  { group: "rbac.authorization.k8s.io", version: "v1", kind: "Role", resource: "roles", namespaced: true },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    kind: "RoleBinding",
    resource: "rolebindings",
    namespaced: true,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    kind: "ClusterRole",
    resource: "clusterroles",
    namespaced: false,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    kind: "ClusterRoleBinding",
    resource: "clusterrolebindings",
    namespaced: false,
  },
  {
    group: "apiextensions.k8s.io",
    version: "v1",
    kind: "CustomResourceDefinition",
    resource: "customresourcedefinitions",
    namespaced: false,
    shortNames: ["crd", "crds"],
    status: true,
    generation: true,
  },
];

export function builtinKinds(): KindInfo[] {
  return BUILTINS.map((b) => ({
    singular: b.kind.toLowerCase(),
    unconditionalUpdate: true,
    status: false,
    generation: false,
    selectableFields: [],
    ...b,
  }));
}

/** A custom resource version's kind, from its CRD. */
export function kindsOfCrd(crd: CrdLike): KindInfo[] {
  const spec = crd.spec;
  return spec.versions
    .filter((v) => v.served)
    .map((v) => {
      const scale = v.subresources?.scale as ScalePaths | undefined;
      return {
        group: spec.group,
        version: v.name,
        kind: spec.names.kind,
        resource: spec.names.plural,
        singular: spec.names.singular ?? spec.names.kind.toLowerCase(),
        namespaced: spec.scope === "Namespaced",
        ...(spec.names.shortNames ? { shortNames: spec.names.shortNames } : {}),
        ...(spec.names.categories ? { categories: spec.names.categories } : {}),
        status: Boolean(v.subresources?.status),
        ...(scale ? { scale } : {}),
        generation: true,
        unconditionalUpdate: false,
        selectableFields: (v.selectableFields ?? []).map((f) => f.jsonPath.replace(/^\./, "")),
        schema: v.schema?.openAPIV3Schema ?? {},
        crd: crd.metadata.name,
        storageVersion: spec.versions.find((s) => s.storage)?.name ?? v.name,
      };
    });
}

export interface CrdLike {
  metadata: { name: string };
  spec: {
    group: string;
    scope: "Namespaced" | "Cluster";
    names: {
      plural: string;
      singular?: string;
      kind: string;
      shortNames?: string[];
      categories?: string[];
      listKind?: string;
    };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema?: { openAPIV3Schema?: Record<string, unknown> };
      subresources?: { status?: object; scale?: object };
      selectableFields?: { jsonPath: string }[];
    }[];
    conversion?: { strategy?: string };
  };
}

/** `group/version/resource` → kind, and `apiVersion/kind`, for every built-in kind kube-apiserver serves. */
const LISTED_RESOURCES = new Map<string, string>();
const LISTED_KINDS = new Set<string>();
for (const [document, core] of [
  [BUILTIN_DISCOVERY.core, true],
  [BUILTIN_DISCOVERY.groups, false],
] as const)
  for (const item of document.items)
    for (const { version, resources } of item.versions)
      for (const r of resources) {
        const group = core ? "" : (item.metadata.name ?? "");
        LISTED_RESOURCES.set(`${group}/${version}/${r.resource}`, r.responseKind.kind);
        LISTED_KINDS.add(`${apiVersionOf({ group, version })}/${r.responseKind.kind}`);
      }

/**
 * The kind of a built-in resource kube-apiserver serves (emulated here or not), or undefined: how
 * a request to a listed kind that is not emulated is told from one to an unknown resource.
 */
export function listedBuiltin(group: string, version: string, resource: string): string | undefined {
  return LISTED_RESOURCES.get(`${group}/${version}/${resource}`);
}

/** Whether kube-apiserver serves `kind` in `apiVersion` as a built-in (emulated here or not). */
export function isListedBuiltinKind(apiVersion: string, kind: string): boolean {
  return LISTED_KINDS.has(kindKeyOf({ apiVersion, kind }));
}

/** What a request to a built-in kind that is listed but not emulated is refused with. */
export function notEmulatedKind(kind: string, apiVersion: string, resource?: string): string {
  return `the built-in kind ${kind} (${apiVersion}${resource ? `, resource ${resource}` : ""}): discovery lists it as kube-apiserver does, but its behaviour (defaults, validation, controllers) is not emulated`;
}

/**
 * The aggregated discovery documents (apidiscovery.k8s.io/v2) for `/api` and `/apis`: the built-in
 * kinds as kube-apiserver lists them (emulated or not), then the custom resources served here.
 */
export function discoveryDocuments(kinds: KindInfo[]): {
  core: DiscoveryDocument;
  groups: DiscoveryDocument;
} {
  const byGroup = new Map<string, Map<string, KindInfo[]>>();
  for (const k of kinds) {
    if (!k.crd) continue;
    const versions = byGroup.get(k.group) ?? new Map<string, KindInfo[]>();
    versions.set(k.version, [...(versions.get(k.version) ?? []), k]);
    byGroup.set(k.group, versions);
  }
  const custom = [...byGroup].map(([group, versions]) => ({
    metadata: { name: group, creationTimestamp: null },
    versions: [...versions].map(([version, list]) => ({
      version,
      resources: list.map((k) => ({
        resource: k.resource,
        responseKind: { group: k.group, version: k.version, kind: k.kind },
        scope: k.namespaced ? "Namespaced" : "Cluster",
        singularResource: k.singular,
        verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        ...(k.shortNames ? { shortNames: k.shortNames } : {}),
        ...(k.categories ? { categories: k.categories } : {}),
        subresources: [
          ...(k.status
            ? [
                {
                  subresource: "status",
                  responseKind: { group: k.group, version: k.version, kind: k.kind },
                  verbs: ["get", "patch", "update"],
                },
              ]
            : []),
          ...(k.scale
            ? [
                {
                  subresource: "scale",
                  responseKind: { group: "autoscaling", version: "v1", kind: "Scale" },
                  verbs: ["get", "patch", "update"],
                },
              ]
            : []),
        ],
      })),
      freshness: "Current",
    })),
  }));
  return {
    core: BUILTIN_DISCOVERY.core,
    groups: { ...BUILTIN_DISCOVERY.groups, items: [...BUILTIN_DISCOVERY.groups.items, ...custom] },
  };
}
