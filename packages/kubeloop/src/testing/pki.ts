/**
 * The certificates of a local control plane (its CA, the API server's serving certificate, the
 * users' client certificates) come from the same module as production's: kubeloop's util/pki.ts.
 */
export { CertificateAuthority, generateKeyPair, type IssuedCert } from "../util/index.js";
