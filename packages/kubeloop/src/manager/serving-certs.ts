import type { Logger } from "pino";
import type { Client } from "../client/index.js";
import {
  AlreadyExists,
  Conflict,
  Forbidden,
  ignoreNotFound,
  keyOfRef,
  NotFound,
  refTo,
} from "../client/index.js";
import {
  CustomResourceDefinition,
  type core_v1,
  MutatingWebhookConfiguration,
  Secret,
  ValidatingWebhookConfiguration,
} from "../k8s/index.js";
import { CertificateAuthority, certificateCurrent, type ServingCertificate } from "../util/index.js";

/**
 * The serving certificates an operator issues itself when none is mounted (what
 * open-policy-agent's cert-controller does for Go operators): a CA and a serving certificate for
 * a Service, kept in a Secret every replica reads. For webhooks, the CA is also put in the
 * caBundle of the webhook configurations and CRD conversions named, so `kubectl apply -k
 * config/default` works with nothing installed first; for metrics, the ServiceMonitor verifies
 * with the CA from the Secret. A mounted certificate (cert-manager, Helm, OLM, `kubeloop deploy`)
 * always wins.
 */

/** Where the CA of a self-issued webhook certificate goes: configurations and CRDs by name. */
export interface CaBundleTarget {
  kind: "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" | "CustomResourceDefinition";
  name: string;
}

/** A serving certificate the manager issues itself: where the replicas share it, and for which Service. */
export interface SelfIssuedCertificate {
  /** The Secret, in the operator's namespace, the replicas share the CA and certificate through. */
  secret: string;
  /** The Service, in the operator's namespace, clients call: its DNS names go in the certificate. */
  service: string;
  /**
   * How often a running manager reads the Secret again, renewing the certificate when it expires
   * within 30 days and serving what another replica renewed. Default 12 hours.
   */
  renewCheckIntervalMs?: number;
}

/** How often a running manager checks its self-issued certificates by default: twice a day. */
export const DEFAULT_RENEW_CHECK_INTERVAL_MS = 12 * 3600 * 1000;

/** How the manager issues its webhook certificate when its certificate folder is empty. */
export interface SelfIssuedWebhookCertificate extends SelfIssuedCertificate {
  /** Whose caBundle to set: only these (the generated RBAC lets it patch these, by name). */
  caBundles: CaBundleTarget[];
}

const DAY_MS = 24 * 3600 * 1000;
/** A stored certificate with less than this left, or for other names, is renewed from the same CA. */
export const SELF_ISSUED_RENEW_BEFORE_MS = 30 * DAY_MS;
const CA_KEY_FILE = "ca.key";
const CA_FILE = "ca.crt";

/**
 * The shared certificate: read from the Secret, or created there if absent (the first replica's
 * wins a create race; the others read it), renewed when it expires soon; then the CA is put in
 * every caBundle named. Returns what to serve with. `purpose` names it in logs and errors.
 */
export async function ensureSelfIssuedCertificate(
  client: Client,
  namespace: string,
  spec: SelfIssuedCertificate & { caBundles?: readonly CaBundleTarget[] },
  logger: Logger,
  { purpose = "webhook", now = Date.now }: { purpose?: string; now?: () => number } = {},
): Promise<ServingCertificate> {
  const dnsNames = serviceDnsNames(spec.service, namespace);
  let stored: Stored | undefined;
  for (let attempt = 0; attempt < 5 && !stored; attempt++) {
    const found = await readSecret(client, spec.secret, namespace);
    if (!found) {
      const made = issue(CertificateAuthority.create(`${spec.service}.${namespace}-ca`), dnsNames);
      try {
        await client.create({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: spec.secret, namespace, labels: { "app.kubernetes.io/managed-by": "kubeloop" } },
          type: "kubernetes.io/tls",
          data: encode(made),
        });
        logger.info({ secret: keyOfRef({ namespace, name: spec.secret }) }, `${purpose} certificate issued`);
        stored = made;
      } catch (error) {
        if (!(error instanceof AlreadyExists)) throw forbiddenHint(error, spec, namespace, purpose);
      }
      continue;
    }
    if (certificateCurrent(found.stored.cert, dnsNames, now(), SELF_ISSUED_RENEW_BEFORE_MS)) {
      stored = found.stored;
      continue;
    }
    const renewed = issue(CertificateAuthority.fromPem(found.stored.ca, found.stored.caKey), dnsNames);
    try {
      await client.update({ ...found.secret, data: encode(renewed) });
      logger.info({ secret: keyOfRef({ namespace, name: spec.secret }) }, `${purpose} certificate renewed`);
      stored = renewed;
    } catch (error) {
      if (!(error instanceof Conflict)) throw forbiddenHint(error, spec, namespace, purpose);
    }
  }
  if (!stored)
    throw new Error(`${purpose} certificate: Secret ${namespace}/${spec.secret} kept changing; gave up`);
  await injectCaBundles(client, spec.caBundles ?? [], Buffer.from(stored.ca).toString("base64"), logger);
  return { cert: stored.cert, key: stored.key };
}

/** The Service's names a client may use: short, namespaced, and fully qualified. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}

/**
 * Sets `caBundle` (base64 PEM) in each target where it differs. A webhook configuration's
 * webhooks are patched by index, each guarded by a `test` of its name, so a concurrent reorder
 * fails instead of writing into the wrong webhook; replicas writing the same CA agree.
 */
export async function injectCaBundles(
  client: Client,
  targets: readonly CaBundleTarget[],
  caBundle: string,
  logger: Logger,
): Promise<void> {
  for (const target of targets) {
    try {
      if (target.kind === "CustomResourceDefinition") {
        const crd = await client.get(refTo(CustomResourceDefinition, target.name));
        const webhook = crd.spec.conversion?.webhook;
        if (!webhook?.clientConfig || webhook.clientConfig.caBundle === caBundle) continue;
        await client.patch(
          CustomResourceDefinition,
          target.name,
          [{ op: "add", path: "/spec/conversion/webhook/clientConfig/caBundle", value: caBundle }],
          { type: "json" },
        );
      } else {
        // Both kinds have the same webhooks[].clientConfig shape; one type serves for the two.
        const type = (
          target.kind === "MutatingWebhookConfiguration"
            ? MutatingWebhookConfiguration
            : ValidatingWebhookConfiguration
        ) as typeof MutatingWebhookConfiguration;
        const configuration = await client.get({ type: type, name: target.name });
        const webhooks = configuration.webhooks ?? [];
        const patch = webhooks.flatMap((webhook, i) =>
          webhook.clientConfig.caBundle === caBundle
            ? []
            : [
                { op: "test", path: `/webhooks/${i}/name`, value: webhook.name },
                { op: "add", path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle },
              ],
        );
        if (!patch.length) continue;
        await client.patch(type, target.name, patch, { type: "json" });
      }
      logger.info({ target: `${target.kind}/${target.name}` }, "webhook CA injected");
    } catch (error) {
      if (error instanceof NotFound)
        throw new Error(
          `webhook certificate: ${target.kind} ${target.name} not found, so its caBundle cannot be set (apply the operator's webhook configurations and CRDs with it)`,
          { cause: error },
        );
      throw error;
    }
  }
}

interface Stored extends ServingCertificate {
  ca: string;
  caKey: string;
}

async function readSecret(
  client: Client,
  name: string,
  namespace: string,
): Promise<{ secret: core_v1.Secret; stored: Stored } | undefined> {
  const secret = await client.get(refTo(Secret, name, namespace)).catch(ignoreNotFound);
  if (secret === undefined) return undefined;
  const data = secret.data ?? {};
  const text = (key: string) => Buffer.from(data[key] ?? "", "base64").toString();
  const stored = {
    cert: text("tls.crt"),
    key: text("tls.key"),
    ca: text(CA_FILE),
    caKey: text(CA_KEY_FILE),
  };
  const missing = ["tls.crt", "tls.key", CA_FILE, CA_KEY_FILE].filter((key) => !data[key]);
  for (const key of missing)
    throw new Error(
      `self-issued certificate: Secret ${namespace}/${name} has no ${key} (it is the operator's own; delete it to have a new one issued)`,
    );
  return { secret, stored };
}

function issue(ca: CertificateAuthority, dnsNames: string[]): Stored {
  const serving = ca.issueServing({
    commonName: dnsNames[2] ?? dnsNames[0] ?? "webhook",
    dnsNames,
    ipAddresses: [],
  });
  return { ...serving, ca: ca.cert, caKey: ca.privateKeyPem() };
}

function encode(stored: Stored): Record<string, string> {
  const base64 = (text: string) => Buffer.from(text).toString("base64");
  return {
    "tls.crt": base64(stored.cert),
    "tls.key": base64(stored.key),
    [CA_FILE]: base64(stored.ca),
    [CA_KEY_FILE]: base64(stored.caKey),
  };
}

function forbiddenHint(
  error: unknown,
  spec: SelfIssuedCertificate,
  namespace: string,
  purpose: string,
): unknown {
  if (!(error instanceof Forbidden)) return error;
  return new Error(
    `${purpose} certificate: may not write Secret ${namespace}/${spec.secret} (${error.message}); the generated RBAC grants it (config/rbac/serving-certs-roles.yaml), or mount a certificate instead`,
    { cause: error },
  );
}
