import { createPrivateKey, generateKeyPairSync, randomBytes, X509Certificate } from "node:crypto";
import { createRequire } from "node:module";
import { isIP } from "node:net";
import type forge from "node-forge";

let forgeModule: typeof forge | undefined;
/**
 * node-forge, loaded at the first certificate made (~10 MiB of RSS and 50 ms at import): every
 * client imports this file, few processes sign anything. `createRequire(import.meta.url)(…)` is
 * the form `kubeloop build`'s bundler reads as a `require` and bundles.
 */
function nodeForge(): typeof forge {
  forgeModule ??= createRequire(import.meta.url)("node-forge") as typeof forge;
  return forgeModule;
}

/**
 * A certificate authority and the certificates it signs, for production and tests alike: the CA
 * `kubeloop deploy` keeps for the webhook server's serving certificate, the self-signed metrics
 * certificate, and a test control plane's API server and users.
 *
 * Keys are RSA-2048, made by Node's native crypto (~50 ms); node-forge only assembles and signs
 * the X.509 structures (SHA-256), because node:crypto reads certificates but cannot write them.
 * Every certificate has a random 128-bit serial, is back-dated {@link CLOCK_SKEW_MS} for clocks
 * that disagree, and carries the extensions verifiers check: a CA has `basicConstraints cA`
 * (path length 0), `keyCertSign`/`cRLSign` and a subject key identifier; a leaf has `cA: false`,
 * `digitalSignature`/`keyEncipherment`, its `extKeyUsage` and the CA's authority key identifier.
 * Private keys come out as PKCS#8 PEM, certificates as PEM.
 */

/** A PEM private key (PKCS#8) and its public key (SubjectPublicKeyInfo). */
export interface KeyPair {
  privateKey: string;
  publicKey: string;
}

/** A PEM certificate and its PEM private key (PKCS#8), as `tls.createSecureContext` takes them. */
export interface IssuedCert {
  cert: string;
  key: string;
}

export interface ServingCertRequest {
  /** The subject's CN; clients check the SANs, so it is for people reading the certificate. */
  commonName: string;
  /** DNS names the server answers to (`*.example.com` wildcards allowed). */
  dnsNames: string[];
  /** IPv4 or IPv6 addresses the server answers on. */
  ipAddresses: string[];
}

export interface ClientCertRequest {
  /** The user name Kubernetes sees (the subject's CN). */
  user: string;
  /** The groups Kubernetes sees (the subject's O). */
  groups?: string[];
}

export interface Validity {
  /** How long the certificate is valid from now. */
  validityMs?: number;
}

const DAY_MS = 24 * 3600 * 1000;
/** A CA outlives many leaf certificates: renewing a leaf never changes what clients trust. */
export const DEFAULT_CA_VALIDITY_MS = 10 * 365 * DAY_MS;
/** A leaf certificate: a year, kubeadm's choice; renew before it ends. */
export const DEFAULT_LEAF_VALIDITY_MS = 365 * DAY_MS;
/** notBefore is set this far back: a verifier whose clock is behind ours still accepts a fresh certificate. */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;

/** A new RSA-2048 key pair, PEM-encoded. */
export function generateKeyPair(): KeyPair {
  return generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
}

/**
 * A certificate authority that signs serving and client certificates.
 *
 * @example
 * ```ts
 * const ca = CertificateAuthority.create("my-operator-webhook-ca");
 * const { cert, key } = ca.issueServing({
 *   commonName: "my-operator-webhook.system.svc",
 *   dnsNames: ["my-operator-webhook.system.svc"],
 *   ipAddresses: [],
 * });
 * https.createServer({ cert, key }, handler); // clients trust ca.cert
 * ```
 */
export class CertificateAuthority {
  /** The CA's PEM certificate: what clients trust (a caBundle, a kubeconfig's certificate-authority-data). */
  readonly cert: string;
  private readonly forgeCert: forge.pki.Certificate;
  private readonly forgeKey: forge.pki.rsa.PrivateKey;
  private readonly keyPem: string;

  private constructor(cert: forge.pki.Certificate, keyPem: string) {
    this.forgeCert = cert;
    this.keyPem = keyPem;
    this.forgeKey = nodeForge().pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
    this.cert = nodeForge().pki.certificateToPem(cert);
  }

  /** A new self-signed CA named `commonName`, valid {@link DEFAULT_CA_VALIDITY_MS} (10 years) by default. */
  static create(
    commonName = "kubeloop-ca",
    { validityMs = DEFAULT_CA_VALIDITY_MS }: Validity = {},
  ): CertificateAuthority {
    const pair = generateKeyPair();
    const subject = [{ name: "commonName", value: nonEmpty("commonName", commonName) }];
    const cert = newCertificate(pair.publicKey, subject, validityMs);
    cert.setIssuer(subject);
    cert.setExtensions([
      { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      { name: "subjectKeyIdentifier" },
    ]);
    signWith(cert, pair.privateKey);
    return new CertificateAuthority(cert, pair.privateKey);
  }

  /**
   * A CA made earlier, from its PEM certificate and private key (e.g. kept in a Secret). Throws if
   * the certificate is not a CA's or the key is not its key.
   */
  static fromPem(certPem: string, keyPem: string): CertificateAuthority {
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(certPem);
    } catch (error) {
      throw new Error(`CA certificate unreadable: ${(error as Error).message} (expected a PEM certificate)`, {
        cause: error,
      });
    }
    if (!x509.ca) throw new Error(`certificate ${x509.subject} is not a CA (basicConstraints cA is not set)`);
    let matches: boolean;
    try {
      matches = x509.checkPrivateKey(createPrivateKey(keyPem));
    } catch (error) {
      throw new Error(`CA private key unreadable: ${(error as Error).message} (expected a PEM RSA key)`, {
        cause: error,
      });
    }
    if (!matches) throw new Error(`the private key given is not the key of CA certificate ${x509.subject}`);
    return new CertificateAuthority(nodeForge().pki.certificateFromPem(certPem), keyPem);
  }

  /** PEM (PKCS#8) of the CA's private key: keep it where no workload reads it. */
  privateKeyPem(): string {
    return this.keyPem;
  }

  /** When the CA stops being valid; no certificate it issues outlives it. */
  get notAfter(): Date {
    return this.forgeCert.validity.notAfter;
  }

  /**
   * A certificate a server presents, for its DNS names and IP addresses (at least one of them);
   * clients check them against the address they dialled. Valid {@link DEFAULT_LEAF_VALIDITY_MS}
   * (a year) by default, and never past the CA's own end.
   */
  issueServing(request: ServingCertRequest, validity: Validity = {}): IssuedCert {
    for (const name of request.dnsNames) {
      if (!DNS_NAME.test(name) || name.length > 253)
        throw new Error(
          `not a DNS name: "${name}" (lower-case labels of letters, digits and "-", dot-separated)`,
        );
    }
    for (const ip of request.ipAddresses) {
      if (!isIP(ip)) throw new Error(`not an IP address: "${ip}" (put host names in dnsNames)`);
    }
    if (request.dnsNames.length + request.ipAddresses.length === 0)
      throw new Error(
        "a serving certificate needs at least one DNS name or IP address to be checked against",
      );
    const altNames = [
      ...request.dnsNames.map((value) => ({ type: 2, value })),
      ...request.ipAddresses.map((ip) => ({ type: 7, ip })),
    ];
    return this.issue(
      [{ name: "commonName", value: nonEmpty("commonName", request.commonName) }],
      [
        { name: "extKeyUsage", serverAuth: true },
        { name: "subjectAltName", altNames },
      ],
      validity.validityMs,
    );
  }

  /** A certificate Kubernetes authenticates as `user` in `groups` (e.g. `system:masters`). */
  issueClient(request: ClientCertRequest, validity: Validity = {}): IssuedCert {
    const subject: forge.pki.CertificateField[] = [
      { name: "commonName", value: nonEmpty("user", request.user) },
    ];
    for (const group of request.groups ?? []) subject.push({ name: "organizationName", value: group });
    return this.issue(subject, [{ name: "extKeyUsage", clientAuth: true }], validity.validityMs);
  }

  private issue(
    subject: forge.pki.CertificateField[],
    extensions: object[],
    validityMs = DEFAULT_LEAF_VALIDITY_MS,
  ): IssuedCert {
    const pair = generateKeyPair();
    const cert = newCertificate(pair.publicKey, subject, validityMs);
    if (cert.validity.notAfter > this.notAfter) cert.validity.notAfter = new Date(this.notAfter);
    cert.setIssuer(this.forgeCert.subject.attributes);
    cert.setExtensions([
      { name: "basicConstraints", cA: false, critical: true },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
      ...extensions,
      { name: "subjectKeyIdentifier" },
      { name: "authorityKeyIdentifier", keyIdentifier: this.keyIdentifier() },
    ]);
    cert.sign(this.forgeKey, nodeForge().md.sha256.create());
    return { cert: nodeForge().pki.certificateToPem(cert), key: pair.privateKey };
  }

  /** The CA's subject key identifier as it states it (bytes), or as forge derives it for one without. */
  private keyIdentifier(): string {
    const stated = this.forgeCert.getExtension("subjectKeyIdentifier") as
      | { subjectKeyIdentifier?: string }
      | undefined;
    return stated?.subjectKeyIdentifier
      ? nodeForge().util.hexToBytes(stated.subjectKeyIdentifier)
      : this.forgeCert.generateSubjectKeyIdentifier().getBytes();
  }
}

/**
 * A self-signed serving certificate for `names` (DNS names and IP addresses, told apart), for a
 * server nobody verifies by name (a scraper that skips verification) or that pins it. Mount one
 * from a CA where clients verify.
 *
 * @example
 * ```ts
 * const { cert, key } = selfSignedCertificate(["localhost", "127.0.0.1"]);
 * ```
 */
export function selfSignedCertificate(
  names: readonly string[],
  validityMs = DEFAULT_LEAF_VALIDITY_MS,
): IssuedCert {
  const pair = generateKeyPair();
  const subject = [{ name: "commonName", value: names[0] ?? "kubeloop" }];
  const cert = newCertificate(pair.publicKey, subject, validityMs);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    {
      name: "subjectAltName",
      altNames: names.map((name) => (isIP(name) ? { type: 7, ip: name } : { type: 2, value: name })),
    },
    { name: "subjectKeyIdentifier" },
  ]);
  signWith(cert, pair.privateKey);
  return { cert: nodeForge().pki.certificateToPem(cert), key: pair.privateKey };
}

/** RFC 1123 labels, lower case, optionally a leading `*.` wildcard label. */
const DNS_NAME = /^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

function nonEmpty(what: string, value: string): string {
  if (typeof value !== "string" || value === "") throw new Error(`${what} must be a non-empty string`);
  return value;
}

function newCertificate(
  publicKeyPem: string,
  subject: forge.pki.CertificateField[],
  validityMs: number,
): forge.pki.Certificate {
  if (!(validityMs > 0) || !Number.isFinite(validityMs))
    throw new RangeError(`validityMs must be a finite number of milliseconds > 0, got ${validityMs}`);
  const cert = nodeForge().pki.createCertificate();
  cert.publicKey = nodeForge().pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = randomSerial();
  const now = Date.now();
  cert.validity.notBefore = new Date(now - CLOCK_SKEW_MS);
  cert.validity.notAfter = new Date(now + validityMs);
  cert.setSubject(subject);
  return cert;
}

/** 128 random bits: a serial no two certificates share (RFC 5280 asks for at least 64). */
function randomSerial(): string {
  return serialHex(randomBytes(16));
}

/**
 * `bytes` as a positive DER INTEGER in hex: no leading zero bytes, and one zero byte put in front
 * where the top bit is set (else it would read as negative). Go's parser, the API server's,
 * refuses a serial that breaks either rule.
 */
export function serialHex(bytes: Uint8Array): string {
  const hex =
    Buffer.from(bytes)
      .toString("hex")
      .replace(/^(00)+/, "") || "01";
  return Number.parseInt(hex.slice(0, 1), 16) >= 8 ? `00${hex}` : hex;
}

/** Signs `cert` (SHA-256) with a PEM private key. */
function signWith(cert: forge.pki.Certificate, keyPem: string): void {
  const { pki, md } = nodeForge();
  cert.sign(pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey, md.sha256.create());
}
