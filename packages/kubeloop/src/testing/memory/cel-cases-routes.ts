/**
 * The HTTPRoute and GRPCRoute objects of the CEL conformance suite (Gateway API's routes carry most
 * of its rules): paths, hostnames, filters, redirects and rewrites, backends, parents, timeouts,
 * rule names, mirrors, CORS, the total of matches, gRPC methods.
 */

export interface CelCase {
  kind: string;
  label: string;
  spec: Record<string, unknown>;
  update?: Record<string, unknown>;
  /**
   * How the update is sent: a PUT of the object with `update` as its spec (the default), a JSON
   * merge patch of `{spec: update}`, a server-side apply of it, or a PUT of the status
   * subresource with `update` as the status.
   */
  via?: "update" | "patch" | "apply" | "status";
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

export const ROUTE_CASES: readonly CelCase[] = cases;
