import { runSpecConformance } from "./packages/kubeloop/src/resources/cel/spec-conformance.ts";
const t0 = performance.now();
const r = runSpecConformance();
const by: Record<string, Record<string, number>> = {};
for (const o of r) { const s = o.name.split("/")[0]; by[s] ??= { passed: 0, failed: 0, skipped: 0 }; by[s][o.outcome]++; }
console.log(performance.now() - t0, JSON.stringify(by));
console.log(r.filter((o) => o.outcome === "failed").map((o) => o.name).filter((n) => !/^(optionals|proto2|proto3|math_ext|enums|dynamic|block_ext|bindings_ext|macros2|encoders_ext|type_deductions|wrappers|proto2_ext)/.test(n)).join("\n"));
