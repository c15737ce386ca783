/**
 * `util/`: small helpers every layer may use, so each exists once. Internal: no package entry point
 * exports this folder; layers import it through this file like any other layer (docs/architecture.md).
 *
 * @internal
 */
export { type Clock, FakeClock, systemClock } from "./clock.js";
export { type HeapItem, MinHeap } from "./heap.js";
export {
  CertificateAuthority,
  type ClientCertRequest,
  generateKeyPair,
  type IssuedCert,
  type KeyPair,
  type ServingCertRequest,
  selfSignedCertificate,
  type Validity,
} from "./pki.js";
export { closeServer } from "./server.js";
export { type PollOptions, PollTimeoutError, pollUntil, sleep } from "./time.js";
export {
  CERT_FILE,
  CertificateFolder,
  type CertificateFolderOptions,
  certificateCurrent,
  expiryOf,
  KEY_FILE,
  type SecureContextTarget,
  type ServingCertificate,
} from "./tls.js";
export { TokenBucket } from "./token-bucket.js";
