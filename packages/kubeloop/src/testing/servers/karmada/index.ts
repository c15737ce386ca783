/**
 * Karmada on loopback for tests and `kubeloop cluster start --profile karmada`: its plane
 * (karmada-plane.ts), its processes' flags and objects (components.ts), push-mode joins (join.ts).
 */
export { REGION_LABEL as KARMADA_REGION_LABEL } from "./join.js";
export { type KarmadaMember, KarmadaPlane } from "./karmada-plane.js";
export type {
  KarmadaComponentInfo,
  KarmadaComponentName,
  KarmadaMemberOptions,
  KarmadaPlaneOptions,
} from "./options.js";
