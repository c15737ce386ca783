/**
 * The objects of the CEL conformance suite (cel-conformance.test.ts), generated from tables: for
 * each CRD, a valid object and variations that each rule accepts or rejects, and updates that keep
 * or break transition rules. `kind` names a CRD of testdata/crds (or `Rules`, kubeloop's own
 * defineResource kind, or the pgdatabase example's kinds); `spec` is the created object's spec;
 * `update`, when present, is the spec of an update of it.
 */

export interface CelCase {
  kind: string;
  label: string;
  spec: Record<string, unknown>;
  update?: Record<string, unknown>;
}

type Spec = Record<string, unknown>;
const cases: CelCase[] = [];
const add = (kind: string, label: string, spec: Spec, update?: Spec) =>
  cases.push({ kind, label, spec, ...(update ? { update } : {}) });

// ---- Gateway API HTTPRoute ------------------------------------------------------------------
const parentRefs = [{ name: "gw" }];
const route = (rule: Spec, extra: Spec = {}): Spec => ({ parentRefs, rules: [rule], ...extra });
const backend = [{ name: "svc", port: 80 }];

for (const type of ["Exact", "PathPrefix", "RegularExpression"])
  for (const value of [
    "/",
    "/a",
    "a",
    "/a//b",
    "/a/./b",
    "/a/../b",
    "/a%2fb",
    "/a%2Fb",
    "/a#b",
    "/a/.",
    "/a/..",
    "/ok~!$&'()*+,;=:@",
    "/sp ace",
    "/%zz",
    "/%41",
    "",
  ])
    add(
      "HTTPRoute",
      `path ${type} ${JSON.stringify(value)}`,
      route({ matches: [{ path: { type, value } }], backendRefs: backend }),
    );

for (const hostname of [
  "example.com",
  "*.example.com",
  "a.*.com",
  "1.2.3.4",
  "Example.com",
  "*",
  "foo..com",
  "-a.com",
  "a-.com",
])
  add("HTTPRoute", `hostname ${hostname}`, route({ backendRefs: backend }, { hostnames: [hostname] }));

const filterTypes = [
  "RequestHeaderModifier",
  "ResponseHeaderModifier",
  "RequestMirror",
  "RequestRedirect",
  "URLRewrite",
  "ExtensionRef",
  "CORS",
];
const filterBodies: Record<string, Spec> = {
  requestHeaderModifier: { set: [{ name: "x", value: "y" }] },
  responseHeaderModifier: { add: [{ name: "x", value: "y" }] },
  requestMirror: { backendRef: { name: "mirror", port: 80 } },
  requestRedirect: { statusCode: 301 },
  urlRewrite: { hostname: "example.org" },
  extensionRef: { group: "example.com", kind: "Thing", name: "t" },
  cors: { allowOrigins: ["https://example.com"] },
};
const fieldOf = (type: string) => type.charAt(0).toLowerCase() + type.slice(1);
for (const type of filterTypes) {
  const own = fieldOf(type) === "uRLRewrite" ? "urlRewrite" : fieldOf(type);
  add("HTTPRoute", `filter ${type} with its field`, route({ filters: [{ type, [own]: filterBodies[own] }] }));
  add("HTTPRoute", `filter ${type} without its field`, route({ filters: [{ type }] }));
  const other = type === "RequestHeaderModifier" ? "responseHeaderModifier" : "requestHeaderModifier";
  add(
    "HTTPRoute",
    `filter ${type} with ${other}`,
    route({ filters: [{ type, [own]: filterBodies[own], [other]: filterBodies[other] }] }),
  );
  add(
    "HTTPRoute",
    `filter ${type} twice`,
    route({
      filters: [
        { type, [own]: filterBodies[own] },
        { type, [own]: filterBodies[own] },
      ],
    }),
  );
}
add(
  "HTTPRoute",
  "redirect and rewrite together",
  route({
    filters: [
      { type: "RequestRedirect", requestRedirect: {} },
      { type: "URLRewrite", urlRewrite: {} },
    ],
  }),
);
add(
  "HTTPRoute",
  "redirect with backendRefs",
  route({ filters: [{ type: "RequestRedirect", requestRedirect: {} }], backendRefs: backend }),
);
for (const matches of [
  [],
  [{ path: { type: "PathPrefix", value: "/a" } }],
  [{ path: { type: "Exact", value: "/a" } }],
  [{ path: { type: "PathPrefix", value: "/a" } }, { path: { type: "PathPrefix", value: "/b" } }],
  [{ headers: [{ name: "x", value: "y" }] }],
])
  for (const filter of ["requestRedirect", "urlRewrite"]) {
    const type = filter === "requestRedirect" ? "RequestRedirect" : "URLRewrite";
    add(
      "HTTPRoute",
      `${type} replacePrefixMatch with ${matches.length} matches (${JSON.stringify(matches).slice(0, 40)})`,
      route({
        matches,
        filters: [{ type, [filter]: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/x" } } }],
      }),
    );
    add(
      "HTTPRoute",
      `${type} replacePrefixMatch in a backendRef with ${matches.length} matches`,
      route({
        matches,
        backendRefs: [
          {
            name: "svc",
            port: 80,
            filters: [
              {
                type: "URLRewrite",
                urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/x" } },
              },
            ],
          },
        ],
      }),
    );
  }
for (const path of [
  { type: "ReplaceFullPath" },
  { type: "ReplaceFullPath", replaceFullPath: "/x" },
  { type: "ReplacePrefixMatch" },
  { type: "ReplaceFullPath", replacePrefixMatch: "/x" },
  { type: "ReplacePrefixMatch", replaceFullPath: "/x" },
])
  add(
    "HTTPRoute",
    `rewrite path ${JSON.stringify(path)}`,
    route({ filters: [{ type: "URLRewrite", urlRewrite: { path } }] }),
  );
for (const [group, kind, port] of [
  ["", "Service", undefined],
  ["", "Service", 80],
  ["example.com", "Thing", undefined],
  [undefined, undefined, undefined],
  ["", "Other", undefined],
] as const)
  add(
    "HTTPRoute",
    `backendRef group=${group} kind=${kind} port=${port}`,
    route({
      backendRefs: [
        {
          name: "svc",
          ...(group !== undefined ? { group } : {}),
          ...(kind ? { kind } : {}),
          ...(port ? { port } : {}),
        },
      ],
    }),
  );
for (const refs of [
  [{ name: "gw" }, { name: "gw" }],
  [
    { name: "gw", sectionName: "a" },
    { name: "gw", sectionName: "b" },
  ],
  [
    { name: "gw", sectionName: "a" },
    { name: "gw", sectionName: "a" },
  ],
  [{ name: "gw", sectionName: "a" }, { name: "gw" }],
  [
    { name: "gw", namespace: "x" },
    { name: "gw", namespace: "y" },
  ],
  [
    { name: "gw", namespace: "x" },
    { name: "gw", namespace: "x" },
  ],
  [{ name: "gw" }, { name: "gw2" }],
  [
    { name: "gw", port: 80 },
    { name: "gw", port: 443 },
  ],
])
  add("HTTPRoute", `parentRefs ${JSON.stringify(refs)}`, {
    parentRefs: refs,
    rules: [{ backendRefs: backend }],
  });
for (const timeouts of [
  { request: "10s" },
  { request: "10s", backendRequest: "5s" },
  { request: "10s", backendRequest: "20s" },
  { request: "0s", backendRequest: "20s" },
  { backendRequest: "1h" },
  { request: "1m", backendRequest: "61s" },
  { request: "500ms", backendRequest: "499ms" },
])
  add("HTTPRoute", `timeouts ${JSON.stringify(timeouts)}`, route({ timeouts, backendRefs: backend }));
for (const names of [
  ["a", "b"],
  ["a", "a"],
  ["a", undefined],
  [undefined, undefined],
])
  add("HTTPRoute", `rule names ${JSON.stringify(names)}`, {
    parentRefs,
    rules: names.map((name) => ({ ...(name ? { name } : {}), backendRefs: backend })),
  });
for (const mirror of [
  { percent: 50 },
  { fraction: { numerator: 1, denominator: 2 } },
  { percent: 50, fraction: { numerator: 1 } },
  { fraction: { numerator: 3, denominator: 2 } },
  { fraction: { numerator: 2 } },
])
  add(
    "HTTPRoute",
    `mirror ${JSON.stringify(mirror)}`,
    route({
      filters: [{ type: "RequestMirror", requestMirror: { backendRef: { name: "m", port: 80 }, ...mirror } }],
    }),
  );
for (const allow of [["*"], ["*", "GET"], ["GET", "POST"]])
  add(
    "HTTPRoute",
    `cors allowMethods ${allow.join(",")}`,
    route({ filters: [{ type: "CORS", cors: { allowMethods: allow } }] }),
  );
for (const [rules, perRule] of [
  [2, 64],
  [3, 50],
  [16, 8],
  [2, 65],
] as const)
  add("HTTPRoute", `${rules} rules of ${perRule} matches`, {
    parentRefs,
    rules: Array.from({ length: rules }, () => ({
      matches: Array.from({ length: perRule }, (_, i) => ({ path: { type: "Exact", value: `/p${i}` } })),
    })),
  });

// ---- Gateway API GRPCRoute ------------------------------------------------------------------
for (const type of [undefined, "Exact", "RegularExpression"])
  for (const method of [
    { service: "foo.Bar" },
    { method: "Get" },
    { service: "foo.Bar", method: "Get" },
    {},
    { service: "foo..Bar" },
    { method: "get-thing" },
    { service: "Foo.bar", method: "1x" },
    { service: ".foo" },
  ])
    add("GRPCRoute", `method ${type} ${JSON.stringify(method)}`, {
      parentRefs,
      rules: [{ matches: [{ method: { ...(type ? { type } : {}), ...method } }] }],
    });
for (const type of ["RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "ExtensionRef"]) {
  const own = fieldOf(type);
  add("GRPCRoute", `filter ${type} with its field`, {
    parentRefs,
    rules: [{ filters: [{ type, [own]: filterBodies[own] }] }],
  });
  add("GRPCRoute", `filter ${type} without its field`, { parentRefs, rules: [{ filters: [{ type }] }] });
  add("GRPCRoute", `filter ${type} twice`, {
    parentRefs,
    rules: [
      {
        filters: [
          { type, [own]: filterBodies[own] },
          { type, [own]: filterBodies[own] },
        ],
      },
    ],
  });
}
for (const hostname of ["grpc.example.com", "*.example.com", "10.0.0.1"])
  add("GRPCRoute", `hostname ${hostname}`, { parentRefs, hostnames: [hostname] });

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

export const CEL_CASES: readonly CelCase[] = cases;
