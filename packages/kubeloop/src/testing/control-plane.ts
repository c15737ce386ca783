/**
 * The control plane, as `kubeloop/testing` and the repository's tests import it. The code lives in
 * control-plane/: one module per component (etcd.ts, kube-apiserver.ts, kube-controller-manager.ts,
 * kube-scheduler.ts, kwok.ts), the plane's certificates and kubeconfigs (credentials.ts), the
 * binary diagnosis (diagnosis.ts), etcd compaction (compaction.ts), the hardened settings
 * (hardened.ts), the options (options.ts), the plane's folder, process group and node network
 * (plane-folder.ts), and the class that composes them (control-plane.ts).
 */
export { ControlPlane } from "./control-plane/control-plane.js";
export type { AuditRecord } from "./control-plane/hardened.js";
export type { BaseImageName } from "./control-plane/node-images.js";
export {
  type ComponentInfo,
  type ComponentName,
  type ControlPlaneOptions,
  DEFAULT_NODES,
  DEFAULT_START_TIMEOUT_MS,
  type Profile,
  type UserCredentials,
} from "./control-plane/options.js";
