/**
 * The objects of the CEL conformance suite (cel-conformance.test.ts), generated from tables: for
 * each CRD, a valid object and variations that each rule accepts or rejects, and updates that keep
 * or break transition rules. `kind` names a CRD of testdata/crds (or `Rules`, kubeloop's own
 * defineResource kind, or the pgdatabase example's kinds); `spec` is the created object's spec;
 * `update`, when present, is the spec of an update of it.
 */

import { type CelCase, ROUTE_CASES } from "./cel-cases-routes.js";

export type { CelCase };

type Spec = Record<string, unknown>;
const cases: CelCase[] = [...ROUTE_CASES];
const add = (kind: string, label: string, spec: Spec, update?: Spec, via?: CelCase["via"]) =>
  cases.push({ kind, label, spec, ...(update ? { update } : {}), ...(via ? { via } : {}) });

// ---- Gateway API GatewayClass, BackendTLSPolicy, ReferenceGrant -----------------------------
add("GatewayClass", "controllerName", { controllerName: "example.com/gateway" });
add(
  "GatewayClass",
  "controllerName unchanged",
  { controllerName: "example.com/gateway" },
  { controllerName: "example.com/gateway", description: "d" },
);
add(
  "GatewayClass",
  "controllerName changed",
  { controllerName: "example.com/gateway" },
  { controllerName: "example.com/other" },
);
add("GatewayClass", "bad controllerName", { controllerName: "no-slash" });
const target = { group: "", kind: "Service", name: "svc" };
for (const validation of [
  { hostname: "a.example.com", wellKnownCACertificates: "System" },
  { hostname: "a.example.com", caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }] },
  { hostname: "a.example.com" },
  {
    hostname: "a.example.com",
    wellKnownCACertificates: "System",
    caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }],
  },
  {
    hostname: "a.example.com",
    wellKnownCACertificates: "System",
    subjectAltNames: [{ type: "Hostname", hostname: "b.example.com" }],
  },
  { hostname: "a.example.com", wellKnownCACertificates: "System", subjectAltNames: [{ type: "Hostname" }] },
  {
    hostname: "a.example.com",
    wellKnownCACertificates: "System",
    subjectAltNames: [{ type: "URI", uri: "spiffe://x/y" }],
  },
  {
    hostname: "a.example.com",
    wellKnownCACertificates: "System",
    subjectAltNames: [{ type: "URI", hostname: "b.example.com" }],
  },
  {
    hostname: "a.example.com",
    wellKnownCACertificates: "System",
    subjectAltNames: [{ type: "Hostname", uri: "spiffe://x/y" }],
  },
  { hostname: "a.example.com", wellKnownCACertificates: "System", subjectAltNames: [{ type: "URI" }] },
])
  add("BackendTLSPolicy", `validation ${JSON.stringify(validation).slice(0, 80)}`, {
    targetRefs: [target],
    validation,
  });
for (const refs of [
  [target, target],
  [
    { ...target, sectionName: "a" },
    { ...target, sectionName: "b" },
  ],
  [{ ...target, sectionName: "a" }, target],
  [
    { ...target, sectionName: "a" },
    { ...target, sectionName: "a" },
  ],
  [target, { ...target, name: "other" }],
])
  add("BackendTLSPolicy", `targetRefs ${JSON.stringify(refs).slice(0, 80)}`, {
    targetRefs: refs,
    validation: { hostname: "a.example.com", wellKnownCACertificates: "System" },
  });
add("ReferenceGrant", "from and to", {
  from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "a" }],
  to: [{ group: "", kind: "Service" }],
});
add("ReferenceGrant", "empty namespace", {
  from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "" }],
  to: [{ group: "", kind: "Service" }],
});

// ---- Gateway API Gateway (its addresses use oneOf, anyOf and not) ---------------------------
const http = { name: "http", port: 80, protocol: "HTTP" };
const gateway = (extra: Spec): Spec => ({ gatewayClassName: "example", listeners: [http], ...extra });
for (const addresses of [
  [{ type: "IPAddress", value: "10.0.0.1" }],
  [{ type: "IPAddress", value: "not-an-ip" }],
  [{ value: "::1" }],
  [{ value: "1.2.3" }],
  [{ type: "Hostname", value: "example.com" }],
  [{ type: "Hostname", value: "10.0.0.1" }],
  [{ type: "Hostname", value: "-bad-" }],
  [{ type: "NamedAddress", value: "x" }],
  [{ type: "example.com/custom", value: "anything" }],
  [
    { type: "IPAddress", value: "10.0.0.1" },
    { type: "IPAddress", value: "10.0.0.1" },
  ],
  [
    { type: "Hostname", value: "a.example.com" },
    { type: "Hostname", value: "a.example.com" },
  ],
  [
    { type: "IPAddress", value: "1.2.3" },
    { type: "IPAddress", value: "fe80::1" },
  ],
  [{ type: "IPAddress", value: "fe80::1%eth0" }],
])
  add("Gateway", `addresses ${JSON.stringify(addresses).slice(0, 80)}`, gateway({ addresses }));
for (const listeners of [
  [http, { ...http, name: "http" }],
  [http, { ...http, name: "other" }],
  [http, { ...http, name: "other", hostname: "a.example.com" }],
  [{ name: "tcp", port: 9000, protocol: "TCP", hostname: "a.example.com" }],
  [{ name: "udp", port: 9000, protocol: "UDP" }],
  [{ name: "https", port: 443, protocol: "HTTPS", tls: { mode: "Passthrough" } }],
  [
    {
      name: "https",
      port: 443,
      protocol: "HTTPS",
      tls: { mode: "Terminate", certificateRefs: [{ name: "cert" }] },
    },
  ],
  [{ name: "tls", port: 443, protocol: "TLS" }],
  [{ name: "tls", port: 443, protocol: "TLS", tls: { mode: "Passthrough" } }],
  [{ ...http, tls: { mode: "Terminate", certificateRefs: [{ name: "cert" }] } }],
  [{ name: "https", port: 443, protocol: "HTTPS", tls: { mode: "Terminate" } }],
])
  add("Gateway", `listeners ${JSON.stringify(listeners).slice(0, 80)}`, gateway({ listeners }));
add(
  "Gateway",
  "listener added",
  gateway({}),
  gateway({ listeners: [http, { ...http, name: "b", port: 81 }] }),
);
add(
  "Gateway",
  "address made invalid",
  gateway({ addresses: [{ value: "10.0.0.1" }] }),
  gateway({ addresses: [{ value: "10.0.0" }] }),
);

// ---- Kueue ----------------------------------------------------------------------------------
const flavor = { nodeLabels: { zone: "a" }, topologyName: "default" };
for (const spec of [
  {},
  flavor,
  { topologyName: "default" },
  { topologyName: "default", nodeLabels: {} },
  { nodeTaints: [{ key: "k", effect: "NoSchedule" }] },
  { nodeTaints: [{ key: "k", effect: "Sometimes" }] },
  { tolerations: [{ operator: "Exists" }] },
  { tolerations: [{ operator: "Equal" }] },
  { tolerations: [{ key: "k", operator: "Equal", value: "v" }] },
  { tolerations: [{ key: "k", tolerationSeconds: 5, effect: "NoSchedule" }] },
  { tolerations: [{ key: "k", tolerationSeconds: 5, effect: "NoExecute" }] },
  { tolerations: [{ key: "k", operator: "Maybe" }] },
  { tolerations: [{ key: "k", operator: "Exists", value: "v" }] },
  { tolerations: [{ key: "k", effect: "Later" }] },
  { tolerations: [{ operator: "Exists", value: "v", effect: "Never" }] },
])
  add("ResourceFlavor", `spec ${JSON.stringify(spec).slice(0, 80)}`, spec);
for (const update of [
  flavor,
  { ...flavor, nodeLabels: { zone: "b" } },
  { nodeLabels: { zone: "a" } },
  { ...flavor, topologyName: "other" },
  { ...flavor, tolerations: [{ operator: "Exists" }] },
])
  add("ResourceFlavor", `update to ${JSON.stringify(update).slice(0, 80)}`, flavor, update);
add("ResourceFlavor", "topology added later", { nodeLabels: { zone: "a" } }, flavor);
const levels = (...labels: string[]) => ({ levels: labels.map((nodeLabel) => ({ nodeLabel })) });
for (const spec of [
  levels("zone"),
  levels("zone", "rack"),
  levels("zone", "zone"),
  levels("kubernetes.io/hostname", "rack"),
  levels("rack", "kubernetes.io/hostname"),
  levels("a", "b", "a"),
])
  add("Topology", `levels ${JSON.stringify(spec)}`, spec);
for (const update of [levels("zone", "rack"), levels("zone"), levels("rack", "zone")])
  add("Topology", `levels updated to ${JSON.stringify(update)}`, levels("zone", "rack"), update);
add("LocalQueue", "clusterQueue", { clusterQueue: "cq" });
add(
  "LocalQueue",
  "clusterQueue unchanged",
  { clusterQueue: "cq" },
  { clusterQueue: "cq", stopPolicy: "Hold" },
);
add("LocalQueue", "clusterQueue changed", { clusterQueue: "cq" }, { clusterQueue: "other" });
const group = (covered: string[], resources: string[], borrowingLimit?: number) => ({
  coveredResources: covered,
  flavors: [
    {
      name: "f",
      resources: resources.map((name) => ({
        name,
        nominalQuota: 1,
        ...(borrowingLimit ? { borrowingLimit } : {}),
      })),
    },
  ],
});
for (const spec of [
  { resourceGroups: [group(["cpu"], ["cpu"])] },
  { resourceGroups: [group(["cpu", "memory"], ["cpu"])] },
  { resourceGroups: [group(["cpu"], ["cpu"], 2)] },
  { cohortName: "c", resourceGroups: [group(["cpu"], ["cpu"], 2)] },
  {
    flavorFungibility: {
      whenCanBorrow: "TryNextFlavor",
      whenCanPreempt: "TryNextFlavor",
      preference: "BorrowingOverPreemption",
    },
  },
  {
    flavorFungibility: {
      whenCanBorrow: "MayStopSearch",
      whenCanPreempt: "TryNextFlavor",
      preference: "BorrowingOverPreemption",
    },
  },
  { preemption: { reclaimWithinCohort: "Never", borrowWithinCohort: { policy: "LowerPriority" } } },
  { preemption: { reclaimWithinCohort: "Any", borrowWithinCohort: { policy: "LowerPriority" } } },
  { fairSharing: { weight: "1.5" } },
  { fairSharing: { weight: 2 } },
  { fairSharing: { weight: "lots" } },
])
  add("ClusterQueue", `spec ${JSON.stringify(spec).slice(0, 80)}`, spec);
for (const spec of [
  { resourceGroups: [group(["cpu"], ["cpu"])] },
  { resourceGroups: [group(["cpu", "memory"], ["cpu"])] },
  { parentName: "root" },
])
  add("Cohort", `spec ${JSON.stringify(spec).slice(0, 80)}`, spec);

// ---- kubeloop's own: the pgdatabase example and a defineResource kind -----------------------
const db = { server: { secretName: "admin" }, databaseName: "app" };
add("PgDatabase", "databaseName set", db);
add("PgDatabase", "databaseName unchanged", db, { ...db, connectionLimit: 5 });
add("PgDatabase", "databaseName changed", db, { ...db, databaseName: "other" });
add("PgDatabase", "databaseName added later", { server: { secretName: "admin" } }, db);
add(
  "PgDatabase",
  "restoreFrom changed",
  { ...db, restoreFrom: { backup: "b1" } },
  { ...db, restoreFrom: { backup: "b2" } },
);
add(
  "PgDatabase",
  "restoreFrom kept",
  { ...db, restoreFrom: { backup: "b1" } },
  { ...db, restoreFrom: { backup: "b1" }, connectionLimit: 3 },
);
add("PgDatabaseBackup", "database", { database: "app" });
add("PgDatabaseBackup", "database changed", { database: "app" }, { database: "other" });
add("PgDatabaseBackup", "database kept", { database: "app" }, { database: "app" });

for (const spec of [
  { min: 1, max: 2 },
  { min: 3, max: 2 },
  { min: 1, max: 2, replicas: 5 },
  { min: 1, max: 9, replicas: 5 },
  { min: 1, max: 2, mode: "fast" },
  { min: 1, max: 2, mode: "slow", speed: 3 },
  { min: 1, max: 2, mode: "fast", speed: 3 },
  {
    min: 1,
    max: 2,
    ports: [
      { name: "a", port: 80 },
      { name: "b", port: 80 },
    ],
  },
  {
    min: 1,
    max: 2,
    ports: [
      { name: "a", port: 80 },
      { name: "b", port: 81 },
    ],
  },
  { min: 1, max: 2, tags: { team: "a" } },
  { min: 1, max: 2, tags: { team: "" } },
  { min: 1, max: 2, size: 3 },
  { min: 1, max: 2, size: "3" },
  { min: 1, max: 2, size: "big" },
  { min: 1, max: 2, address: "10.0.0.1" },
  { min: 1, max: 2, address: "::1" },
  { min: 1, max: 2, address: "300.1.1.1" },
  { min: 1, max: 2, address: "fe80::1%eth0" },
  { min: 1, max: 2, cidr: "10.0.0.0/8" },
  { min: 1, max: 2, cidr: "10.0.0.0/33" },
  { min: 1, max: 2, url: "https://example.com/x" },
  { min: 1, max: 2, url: "not a url" },
  { min: 1, max: 2, quantity: "1Gi" },
  { min: 1, max: 2, quantity: "1 Gi" },
  { min: 1, max: 2, version: "1.2.3" },
  { min: 1, max: 2, version: "v1.2" },
  { min: 1, max: 2, scores: [1, 2, 3] },
  { min: 1, max: 2, scores: [3, 1, 2] },
  { min: 1, max: 2, scores: [50, 60] },
  { min: 1, max: 2, name: "a.b-c" },
  { min: 1, max: 2, name: "A_B" },
  { min: 1, max: 2, items: ["x"] },
  { min: 1, max: 2, items: [] },
])
  add("Rules", `spec ${JSON.stringify(spec).slice(0, 80)}`, spec);
for (const update of [
  { min: 1, max: 2, ports: [{ name: "a", port: 80 }] },
  { min: 1, max: 2, ports: [{ name: "a", port: 81 }] },
  { min: 1, max: 2, ports: [{ name: "b", port: 81 }] },
  { min: 1, max: 3, ports: [{ name: "a", port: 80 }] },
  { min: 1, max: 1, ports: [{ name: "a", port: 80 }] },
  { min: 1, max: 2, ports: [{ name: "a", port: 80 }], tags: { team: "a" } },
])
  add(
    "Rules",
    `update to ${JSON.stringify(update).slice(0, 80)}`,
    { min: 1, max: 2, ports: [{ name: "a", port: 80 }], tags: { team: "a" } },
    update,
  );

add("Rules", "replicas 7 (a rule with a fieldPath and no reason)", { min: 1, max: 9, replicas: 7 });

// The same rules through the other write paths: merge patch, server-side apply, status writes.
const base = { min: 1, max: 2, ports: [{ name: "a", port: 80 }], tags: { team: "a" } };
for (const via of ["patch", "apply"] as const) {
  add("Rules", `${via}: max shrinks`, base, { ...base, max: 1 }, via);
  add("Rules", `${via}: a port's number changes`, base, { ...base, ports: [{ name: "a", port: 81 }] }, via);
  add("Rules", `${via}: min over max`, base, { ...base, min: 5, max: 4 }, via);
  add("Rules", `${via}: a valid change`, base, { ...base, max: 3 }, via);
}
for (const status of [
  { phase: "Ready" },
  { phase: "Lost" },
  { phase: "Ready", observed: 3 },
  { observed: 0 },
  { observed: -1 },
])
  add("Rules", `status ${JSON.stringify(status)}`, base, status, "status");

// Embedded resources: apiVersion and kind required, metadata kept as ObjectMeta, labels checked.
const cm = { apiVersion: "v1", kind: "ConfigMap" };
for (const template of [
  { ...cm, metadata: { name: "x" }, data: { a: "b" } },
  { kind: "ConfigMap" },
  { apiVersion: "v1" },
  {},
  { ...cm, metadata: { name: "Bad_Name" } },
  { ...cm, metadata: { generateName: "Bad_" } },
  {
    ...cm,
    metadata: {
      name: "x",
      foo: 1,
      uid: "u",
      namespace: "ns",
      labels: { a: "b" },
      annotations: { c: "d" },
      finalizers: ["x/y"],
      ownerReferences: [],
    },
  },
  { ...cm, metadata: { labels: { "bad key!": "v" } } },
  { ...cm, metadata: { name: "x", labels: { a: "bad value!" } } },
])
  add("Wrapper", `template ${JSON.stringify(template).slice(0, 80)}`, { template });
for (const typed of [
  { apiVersion: "x/v1", kind: "Thing", metadata: { name: "t" }, spec: { replicas: 3, extra: 1 }, other: 2 },
  { apiVersion: "x/v1", kind: "Other", metadata: { name: "no" }, spec: { replicas: 3 } },
  { apiVersion: "x/v1", kind: "Thing", spec: { replicas: 9 } },
  { kind: "Thing" },
  { apiVersion: "x/v1", kind: "Thing", metadata: { name: "t" } },
])
  add("Wrapper", `typed ${JSON.stringify(typed).slice(0, 80)}`, { typed });

export const CEL_CASES: readonly CelCase[] = cases;
