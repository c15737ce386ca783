/**
 * The built-in kinds as kube-apiserver lists them: its aggregated discovery documents
 * (apidiscovery.k8s.io/v2) for `/api` and `/apis`, as served by the version in `capturedFrom`
 * (ControlPlane, apiserver profile, no CRDs). The data is builtin-discovery.json, written by
 * capture-discovery.ts: do not edit it, rerun
 * `npm run build && node packages/kubeloop/dist/testing/memory/capture-discovery.js`.
 * conformance.test.ts compares it with a live server.
 */
import captured from "./builtin-discovery.json" with { type: "json" };
import type { DiscoveryDocument } from "./discovery.js";

/** The kube-apiserver version the documents were captured from. */
export const CAPTURED_FROM: string = captured.capturedFrom;

export const BUILTIN_DISCOVERY: { core: DiscoveryDocument; groups: DiscoveryDocument } = {
  core: captured.core,
  groups: captured.groups,
};
