// Names other layers need to run controllers (the manager's wiring, the shard gate), but users do
// not: no entry point maps this file (docs/architecture.md, "The public API").
export { ApiPressure } from "./adaptive-workers.js";
export { checkNamespaces } from "./builder.js";
export type {
  ControllerEnvironment,
  ControllerMetricsSink,
  ControllerShard,
  ShardedController,
  ShardGate,
} from "./spec.js";
