// CEL validation rules per second on a Gateway API HTTPRoute, as kubeloop/testing's validate()
// runs them (the in-memory API server runs the same code on every write): the real HTTPRoute CRD
// (Gateway API v1.7.0, from the memory server's conformance test data), one realistic route
// (4 rules of 3 matches, filters, backends, hostnames, 2 parents), validated again and again.
// Reports objects/s for the whole validation (pruning, defaults, schema, CEL) and rules/s (the
// rules evaluated per object — counted by walking the schema and the object — times objects/s).
// Median of --runs runs of --seconds each, after a warm-up.
// Run: npm run bench:cel, or npm run build && node bench/cel-rules.mjs [--runs 5] [--seconds 2]
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { validate } from "kubeloop/testing";
import { parse } from "yaml";
import { median } from "./stats.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, seconds: { type: "string", default: "2" } },
});
const crd = parse(
  readFileSync(
    new URL(
      "../packages/kubeloop/src/testing/memory/testdata/crds/gateway-api-httproutes.yaml",
      import.meta.url,
    ),
    "utf8",
  ),
);
const schema = crd.spec.versions[0].schema.openAPIV3Schema;

const rule = (i) => ({
  name: `rule-${i}`,
  matches: [
    { path: { type: "PathPrefix", value: `/api/v${i}` } },
    { path: { type: "Exact", value: `/health/${i}` }, headers: [{ name: "x-env", value: "prod" }] },
    { path: { type: "PathPrefix", value: `/static/${i}` }, method: "GET" },
  ],
  filters: [
    { type: "RequestHeaderModifier", requestHeaderModifier: { set: [{ name: "x-route", value: `r${i}` }] } },
    { type: "ResponseHeaderModifier", responseHeaderModifier: { remove: ["server"] } },
  ],
  backendRefs: [
    { name: `svc-${i}`, port: 8080, weight: 90 },
    { name: `canary-${i}`, port: 8080, weight: 10 },
  ],
  timeouts: { request: "10s", backendRequest: "5s" },
});
const route = {
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: { name: "shop", namespace: "default" },
  spec: {
    parentRefs: [
      { name: "public", sectionName: "https" },
      { name: "internal", namespace: "infra" },
    ],
    hostnames: ["shop.example.com", "*.shop.example.com", "www.example.com"],
    rules: [0, 1, 2, 3].map(rule),
  },
};

/** The rules the API server evaluates on this object: every rule of every non-null value's schema (no transition rules on create). */
function countRules(value, node) {
  if (value === null || value === undefined || !node) return 0;
  let n = (node["x-kubernetes-validations"] ?? []).filter((r) => !/\boldSelf\b/.test(r.rule)).length;
  if (Array.isArray(value)) for (const item of value) n += countRules(item, node.items);
  else if (typeof value === "object")
    for (const [key, child] of Object.entries(value))
      n += countRules(
        child,
        node.properties?.[key] ??
          (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined),
      );
  return n;
}

const causes = validate(crd, route);
if (causes.length) throw new Error(`the route is not valid: ${JSON.stringify(causes)}`);
const perObject = countRules(route, schema);

function run(seconds) {
  const end = performance.now() + seconds * 1000;
  let objects = 0;
  const start = performance.now();
  while (performance.now() < end) {
    validate(crd, route);
    objects++;
  }
  return objects / ((performance.now() - start) / 1000);
}

run(1); // warm-up: compilation of every rule, JIT
const rates = Array.from({ length: Number(values.runs) }, () => run(Number(values.seconds)));
const objects = median(rates);
console.log(
  JSON.stringify({
    bench: "cel-rules",
    object: "HTTPRoute (Gateway API v1.7.0), 4 rules × 3 matches",
    rulesPerObject: perObject,
    objectsPerSecond: Math.round(objects),
    rulesPerSecond: Math.round(objects * perObject),
    runs: rates.map(Math.round),
    cpu: cpus()[0]?.model,
    node: process.version,
  }),
);
