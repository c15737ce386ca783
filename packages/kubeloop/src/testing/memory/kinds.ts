/**
 * The kinds the in-memory server serves: a fixed table of built-in kinds (only those whose
 * behaviour is emulated; any other built-in is unknown here, hence refused) and the custom
 * resources of the CRDs created on it.
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
  {
    group: "",
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
  },
  {
    group: "events.k8s.io",
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
  },
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

/** The aggregated discovery documents (apidiscovery.k8s.io/v2) for `/api` and `/apis`. */
export function discoveryDocuments(kinds: KindInfo[]): { core: object; groups: object } {
  const byGroup = new Map<string, Map<string, KindInfo[]>>();
  for (const k of kinds) {
    const versions = byGroup.get(k.group) ?? new Map<string, KindInfo[]>();
    versions.set(k.version, [...(versions.get(k.version) ?? []), k]);
    byGroup.set(k.group, versions);
  }
  const document = (groups: [string, Map<string, KindInfo[]>][]) => ({
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: groups.map(([group, versions]) => ({
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
    })),
  });
  const all = [...byGroup];
  return { core: document(all.filter(([g]) => g === "")), groups: document(all.filter(([g]) => g !== "")) };
}
