import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClientConfig, mapClientConfigs } from "../webhook/internal.js";
import { CertificateAuthority } from "./pki.js";
import { freePorts } from "./ports.js";

/**
 * Webhooks served from this machine to a local API server (tests, `kubeloop run`): a throwaway CA,
 * a serving certificate for 127.0.0.1/localhost in a cert folder, and `rewrite()`, which points the
 * generated manifests (written for a Service in the cluster) at `https://127.0.0.1:<port>` with
 * that CA — envtest's approach, so the same config/ files serve both.
 *
 * @example
 * ```ts
 * import { localWebhookServing } from "kubeloop/testing";
 * const serving = await localWebhookServing();
 * const manager = new Manager({ webhooks: { certDir: serving.certDir, port: serving.port } });
 * await plane.installCrdObjects(serving.rewrite(crds));
 * ```
 */
export interface LocalWebhookServing {
  /** Holds `tls.crt` and `tls.key`. */
  readonly certDir: string;
  /** Base64 PEM of the CA, as `caBundle` fields want it. */
  readonly caBundle: string;
  /** The port the webhook server must listen on (the URLs `rewrite()` writes name it). */
  readonly port: number;
  /** Copies of the objects with every webhook Service reference turned into the local URL. */
  rewrite<T extends object>(objects: readonly T[]): T[];
  /** Removes the cert folder. */
  dispose(): void;
}

/**
 * Makes the certificates and URL rewriting for serving webhooks from this process to a local API
 * server (see {@link LocalWebhookServing}), on `port` or a free one. The manifests in config/ stay
 * as they ship: only the copies installed in the test cluster point at this machine.
 *
 * @example
 * ```ts
 * import { Manager } from "kubeloop";
 * import { ControlPlane, localWebhookServing, readCrds } from "kubeloop/testing";
 *
 * const plane = await new ControlPlane().start();
 * const serving = await localWebhookServing();
 * await plane.installCrdObjects(serving.rewrite(readCrds(["config/crd"]))); // conversion calls come here
 * const manager = new Manager({
 *   kubeconfig: plane.kubeconfigPath,
 *   webhooks: { certDir: serving.certDir, port: serving.port },
 * });
 * ```
 */
export async function localWebhookServing(options: { port?: number } = {}): Promise<LocalWebhookServing> {
  const port = options.port ?? (await freePorts(1))[0];
  if (port === undefined) throw new Error("no free port for the webhook server");
  const ca = CertificateAuthority.create("kubeloop-local-webhooks");
  const serving = ca.issueServing({
    commonName: "localhost",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
  });
  const certDir = mkdtempSync(join(tmpdir(), "kubeloop-webhook-certs-"));
  writeFileSync(join(certDir, "tls.crt"), serving.cert);
  writeFileSync(join(certDir, "tls.key"), serving.key, { mode: 0o600 });
  const caBundle = Buffer.from(ca.cert).toString("base64");
  const toUrl = (config: ClientConfig): ClientConfig => {
    const { service, ...rest } = config;
    return { ...rest, url: `https://127.0.0.1:${port}${service?.path ?? "/"}`, caBundle };
  };
  return {
    certDir,
    caBundle,
    port,
    rewrite: (objects) => objects.map((object) => mapClientConfigs(structuredClone(object), toUrl)),
    dispose: () => rmSync(certDir, { recursive: true, force: true }),
  };
}
