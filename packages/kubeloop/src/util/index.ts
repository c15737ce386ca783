/**
 * `util/`: small helpers every layer may use, so each exists once. Internal: no package entry point
 * exports this folder; layers import it through this file like any other layer (docs/architecture.md).
 *
 * @internal
 */
export { sleep } from "./time.js";
export {
  CERT_FILE,
  CertificateFolder,
  type CertificateFolderOptions,
  expiryOf,
  KEY_FILE,
  type SecureContextTarget,
  type ServingCertificate,
  selfSignedCertificate,
} from "./tls.js";
export { TokenBucket } from "./token-bucket.js";
