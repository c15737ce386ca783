import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * The TLS bits the manager's HTTPS servers share (the webhook server and the secure metrics
 * server): a serving certificate read from a folder in cert-manager's layout and reloaded when
 * its files change. (A self-signed one for servers nobody verifies by name: `selfSignedCertificate`, in pki.ts.)
 */

/** A PEM certificate (chain) and its private key, as `tls.createSecureContext` takes them. */
export interface ServingCertificate {
  /** The certificate chain, PEM. */
  cert: string;
  /** Its private key, PEM. */
  key: string;
}

/** Where a server that serves TLS can take new certificates from (`https.Server` has it). */
export interface SecureContextTarget {
  setSecureContext(options: ServingCertificate): void;
}

export interface CertificateFolderOptions {
  /** What the certificate serves, for errors: `webhook` → "webhook certificate missing: …". */
  purpose: string;
  /** How to fix a missing file, for errors: e.g. "mount the serving certificate there, or set WEBHOOK_CERT_DIR". */
  hint: string;
}

/** The files of a serving certificate folder (cert-manager's Secret layout). */
export const CERT_FILE = "tls.crt";
export const KEY_FILE = "tls.key";

/**
 * A serving certificate kept in a folder (`tls.crt`, `tls.key`: a mounted Secret), re-read when
 * the files change. Kubernetes updates a mounted Secret by swapping a symlink, so a change shows
 * as a new mtime or size; polling catches it on every filesystem, inotify does not.
 *
 * @example
 * ```ts
 * const certs = new CertificateFolder("/tmp/k8s-metrics-server/serving-certs", { purpose: "metrics", hint: "set METRICS_CERT_DIR" });
 * const server = https.createServer(certs.read(), handler);
 * setInterval(() => certs.reloadInto(server), 10_000);
 * ```
 */
export class CertificateFolder {
  private stamp = "";
  private current: ServingCertificate | undefined;

  constructor(
    readonly dir: string,
    private readonly options: CertificateFolderOptions,
  ) {}

  /** Reads both files; a missing or unreadable one is an error naming its path and the fix. */
  read(): ServingCertificate {
    const files = [join(this.dir, CERT_FILE), join(this.dir, KEY_FILE)] as const;
    for (const file of files) {
      if (!existsSync(file))
        throw new Error(`${this.options.purpose} certificate missing: ${file} (${this.options.hint})`);
    }
    try {
      const stamp = this.stampNow();
      const read = { cert: readFileSync(files[0], "utf8"), key: readFileSync(files[1], "utf8") };
      expiryOf(read.cert); // a file that is not a PEM certificate fails here, naming it
      this.stamp = stamp;
      this.current = read;
      return read;
    } catch (error) {
      throw new Error(
        `${this.options.purpose} certificate unreadable: ${files.join(", ")}: ${(error as Error).message} (${this.options.hint})`,
        { cause: error },
      );
    }
  }

  /** Both files are there (a Secret mounted with `optional: true` may leave the folder empty). */
  hasFiles(): boolean {
    return existsSync(join(this.dir, CERT_FILE)) && existsSync(join(this.dir, KEY_FILE));
  }

  /** The certificate last read (read it first). */
  get certificate(): ServingCertificate | undefined {
    return this.current;
  }

  /**
   * Re-reads the files if they changed and gives them to `server`: new connections get the new
   * certificate, open ones keep theirs. True when reloaded. A half-written pair (the files are
   * replaced one at a time) fails to read and is retried at the next call.
   */
  reloadInto(server: SecureContextTarget): boolean {
    let stamp: string;
    try {
      stamp = this.stampNow();
    } catch {
      return false;
    }
    if (stamp === this.stamp) return false;
    server.setSecureContext(this.read());
    return true;
  }

  private stampNow(): string {
    return [CERT_FILE, KEY_FILE]
      .map((file) => {
        const stat = statSync(join(this.dir, file));
        return `${stat.mtimeMs}:${stat.size}`;
      })
      .join("|");
  }
}

/** When the first certificate of a PEM chain expires, in seconds since the epoch. Throws if it is not a certificate. */
export function expiryOf(certPem: string): number {
  return Math.floor(new X509Certificate(certPem).validToDate.getTime() / 1000);
}

/**
 * Whether a PEM certificate is valid for more than `marginMs` after `now` and names every one of
 * `dnsNames`: what a keeper of a serving certificate checks before renewing it.
 */
export function certificateCurrent(
  pem: string,
  dnsNames: readonly string[],
  now: number,
  marginMs: number,
): boolean {
  const cert = new X509Certificate(pem);
  const names = (cert.subjectAltName ?? "").split(", ").map((entry) => entry.replace(/^DNS:/, ""));
  return Date.parse(cert.validTo) - now > marginMs && dnsNames.every((n) => names.includes(n));
}
