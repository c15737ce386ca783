import { parseArgs } from "node:util";
import type { Client, KubeObject } from "../client/index.js";
import { ignoreNotFound, refTo } from "../client/index.js";
import { Secret } from "../k8s/index.js";
import { CertificateAuthority, certificateCurrent } from "../util/index.js";
import { type ClientConfig, mapClientConfigs } from "../webhook/internal.js";
import { applyAll, deleteAll, FIELD_MANAGER, isCrd, readConfig } from "./apply-manifests.js";
import { CliError } from "./errors.js";
import { refuseWhileObjectsExist } from "./install.js";
import { webhookCertSecret, webhookServiceName } from "./manifests.js";
import { loadProject, type Project } from "./project.js";
import { regenerate } from "./regenerate.js";
import { requireCluster } from "./target.js";

/**
 * `kubeloop deploy` / `undeploy`: the whole operator on the current cluster from the generated
 * config/ (kubebuilder's `make deploy IMG=…`): namespace, CRDs, RBAC, Services, the Deployment and
 * the webhook configurations, in the order that lets each find what it needs. `--image` replaces
 * the manager's image in what is applied, leaving config/ as generated.
 *
 * With webhooks, the API server must trust the webhook server: deploy keeps a serving certificate
 * for the webhook Service in the Secret the Deployment mounts, made once from a CA of its own, and
 * puts that CA into the webhook configurations and CRD conversion sections (what cert-manager's
 * CA injector does in a kubebuilder project, with nothing to install first).
 */

const DEPLOY_USAGE = `Usage:
  kubeloop deploy [--image IMAGE]   regenerate config/ and apply it to the current cluster

  --image  the manager's image (default: "image" in package.json's "kubeloop" section)`;
const UNDEPLOY_USAGE = `Usage:
  kubeloop undeploy [--keep-crds] [--force]   delete what deploy applied

  --keep-crds  leave the CRDs (and so every object of them) in place
  --force      delete the CRDs even while objects of them exist`;

/** Apply order, as Helm's: what others refer to first; webhook configurations last (they need the server). */
const ORDER = [
  "Namespace",
  "CustomResourceDefinition",
  "ServiceAccount",
  "Secret",
  "ClusterRole",
  "Role",
  "ClusterRoleBinding",
  "RoleBinding",
  "Service",
  "Deployment",
  "MutatingWebhookConfiguration",
  "ValidatingWebhookConfiguration",
];

export async function deployCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { image: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    console.log(DEPLOY_USAGE);
    return 0;
  }
  const project = loadProject();
  const image = values.image ?? project.image;
  if (!image) throw new CliError(`no image to deploy: pass --image, or set "kubeloop.image" in package.json`);
  const target = await requireCluster("deploy to");
  try {
    regenerate(project.root, { quiet: true });
    const objects = operatorObjects(project).map((object) => withImage(object, image));
    console.log(`Deploying ${project.name} (${image}) to ${target.description}`);
    const caBundle = await ensureWebhookCertificate(target.client, objects);
    const trusted = (config: ClientConfig) => ({ ...config, caBundle });
    await applyAll(
      target.client,
      caBundle ? objects.map((object) => mapClientConfigs(structuredClone(object), trusted)) : objects,
    );
  } finally {
    await target.client.close();
  }
  console.log(`Deployed. Watch it come up: kubectl -n ${project.namespace} get deployment,pods`);
  return 0;
}

export async function undeployCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "keep-crds": { type: "boolean", default: false },
      force: { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(UNDEPLOY_USAGE);
    return 0;
  }
  const project = loadProject();
  const objects = operatorObjects(project).filter((object) => !(values["keep-crds"] && isCrd(object)));
  const target = await requireCluster("undeploy from");
  console.log(`Undeploying ${project.name} from ${target.description}`);
  try {
    if (!values["keep-crds"] && !values.force) {
      await refuseWhileObjectsExist(target.client, objects.filter(isCrd), "pass --keep-crds or --force");
    }
    // The webhook configurations go first (reverse order): writes must not wait on a server going away.
    await deleteAll(target.client, objects);
  } finally {
    await target.client.close();
  }
  return 0;
}

/** Everything in config/ but the samples, in apply order. */
function operatorObjects(project: Project): KubeObject[] {
  const rank = (object: KubeObject) => {
    const index = ORDER.indexOf(object.kind ?? "");
    return index === -1 ? ORDER.length : index;
  };
  return readConfig(project.config, ["crd", "rbac", "manager", "webhook"]).sort((a, b) => rank(a) - rank(b));
}

function withImage(object: KubeObject, image: string): KubeObject {
  if (object.kind !== "Deployment") return object;
  const copy = structuredClone(object) as KubeObject & {
    spec: { template: { spec: { containers: { name: string; image?: string }[] } } };
  };
  for (const container of copy.spec.template.spec.containers) {
    if (container.name === "manager") container.image = image;
  }
  return copy;
}

const DAY_MS = 24 * 3600 * 1000;
/** A deploy with less than this left on the serving certificate renews it. */
export const RENEW_BEFORE_MS = 30 * DAY_MS;

/**
 * The webhook server's certificate, kept in the Secret the Deployment mounts (`tls.crt`,
 * `tls.key`, `ca.crt`), for the webhook Service's DNS names; its CA's key is kept apart, in
 * `<secret>-ca`, which no pod mounts. Made on the first deploy; renewed from the same CA when a
 * deploy finds under 30 days left or other names, so the caBundle stays valid and the pods pick
 * the new files up as the kubelet refreshes the mount (the webhook server reloads them). Returns
 * the base64 CA for caBundle fields, or undefined when the operator serves no webhooks.
 */
export async function ensureWebhookCertificate(
  client: Client,
  objects: KubeObject[],
  now: () => number = Date.now,
): Promise<string | undefined> {
  // The Deployment is named after the project, the webhook Service and Secret after it (manifests.ts).
  const { name: project = "", namespace = "" } =
    objects.find((object) => object.kind === "Deployment")?.metadata ?? {};
  const name = webhookServiceName(project);
  if (!objects.some((object) => object.kind === "Service" && object.metadata?.name === name)) {
    return undefined;
  }
  const secretName = webhookCertSecret(project);
  const dnsNames = [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
  const read = async (secret: string) => {
    const found = await client.get(refTo(Secret, secret, namespace)).catch(ignoreNotFound);
    return found ? (found.data ?? {}) : undefined;
  };
  const decode = (value: string | undefined) => (value ? Buffer.from(value, "base64").toString() : undefined);
  const base64 = (text: string) => Buffer.from(text).toString("base64");
  const serving = await read(secretName);
  const servingPem = decode(serving?.["tls.crt"]);
  if (serving?.["ca.crt"] && servingPem && certificateCurrent(servingPem, dnsNames, now(), RENEW_BEFORE_MS))
    return serving["ca.crt"];

  // The namespace must exist before the Secrets can.
  const ns = objects.find((object) => object.kind === "Namespace");
  if (ns) await client.apply(ns, { fieldManager: FIELD_MANAGER, force: true });
  const kept = await read(`${secretName}-ca`);
  const keptCert = decode(kept?.["tls.crt"]);
  const keptKey = decode(kept?.["tls.key"]);
  const ca =
    keptCert && keptKey
      ? CertificateAuthority.fromPem(keptCert, keptKey)
      : CertificateAuthority.create(`${name}-ca`);
  const issued = ca.issueServing({ commonName: dnsNames[0] ?? name, dnsNames, ipAddresses: [] });
  const secret = (secret: string, data: Record<string, string>) =>
    client.apply(
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: secret, namespace },
        type: "kubernetes.io/tls",
        data,
      },
      { fieldManager: FIELD_MANAGER, force: true },
    );
  if (!(keptCert && keptKey)) {
    await secret(`${secretName}-ca`, { "tls.crt": base64(ca.cert), "tls.key": base64(ca.privateKeyPem()) });
  }
  await secret(secretName, {
    "tls.crt": base64(issued.cert),
    "tls.key": base64(issued.key),
    "ca.crt": base64(ca.cert),
  });
  const what = servingPem ? "renewed" : "created";
  console.log(
    `  ${what} the webhook serving certificate in Secret ${namespace}/${secretName} (valid 1 year)`,
  );
  return base64(ca.cert);
}
