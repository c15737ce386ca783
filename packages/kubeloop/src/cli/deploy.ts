import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Client } from "../client/client.js";
import { NotFound } from "../client/errors.js";
import type { KubeObject } from "../client/types.js";
import { CertificateAuthority } from "../testing/pki.js";
import { applyAll, deleteAll, FIELD_MANAGER, isCrd, readManifests } from "./apply-manifests.js";
import { CliError } from "./errors.js";
import { refuseWhileObjectsExist } from "./install.js";
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
    await applyAll(
      target.client,
      caBundle ? objects.map((object) => withCaBundle(object, caBundle)) : objects,
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
  const dirs = ["crd", "rbac", "manager", "webhook"].map((dir) => join(project.config, dir));
  const rank = (object: KubeObject) => {
    const index = ORDER.indexOf(object.kind ?? "");
    return index === -1 ? ORDER.length : index;
  };
  return readManifests(dirs).sort((a, b) => rank(a) - rank(b));
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

type WithClientConfig = { clientConfig?: { caBundle?: string } };

function withCaBundle(object: KubeObject, caBundle: string): KubeObject {
  const copy = structuredClone(object) as KubeObject & {
    webhooks?: WithClientConfig[];
    spec?: { conversion?: { webhook?: WithClientConfig } };
  };
  for (const webhook of copy.webhooks ?? []) {
    if (webhook.clientConfig) webhook.clientConfig.caBundle = caBundle;
  }
  const conversion = copy.spec?.conversion?.webhook?.clientConfig;
  if (isCrd(object) && conversion) conversion.caBundle = caBundle;
  return copy;
}

/**
 * The webhook server's certificate: kept in the Secret the Deployment mounts, created on the first
 * deploy for the webhook Service's DNS names. Returns the base64 CA for caBundle fields, or
 * undefined when the operator serves no webhooks.
 */
async function ensureWebhookCertificate(client: Client, objects: KubeObject[]): Promise<string | undefined> {
  const deployment = objects.find((object) => object.kind === "Deployment") as
    | (KubeObject & { spec: { template: { spec: { volumes?: { secret?: { secretName: string } }[] } } } })
    | undefined;
  const secretName = deployment?.spec.template.spec.volumes?.find((volume) => volume.secret)?.secret
    ?.secretName;
  const service = objects.find(
    (object) => object.kind === "Service" && object.metadata?.name?.endsWith("-webhook-service"),
  );
  if (!secretName || !service) return undefined;
  const namespace = service.metadata?.namespace ?? "";
  const secretType = { apiVersion: "v1", kind: "Secret", plural: "secrets", namespaced: true };
  try {
    const existing = (await client.get(secretType, secretName, { namespace })) as KubeObject & {
      data?: Record<string, string>;
    };
    if (existing.data?.["ca.crt"]) return existing.data["ca.crt"];
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
  }
  // The namespace must exist before the Secret can.
  const ns = objects.find((object) => object.kind === "Namespace");
  if (ns) await client.apply(ns, { fieldManager: FIELD_MANAGER, force: true });
  const name = service.metadata?.name ?? "";
  const ca = CertificateAuthority.create(`${name}-ca`);
  const serving = ca.issueServing({
    commonName: `${name}.${namespace}.svc`,
    dnsNames: [`${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`],
    ipAddresses: [],
  });
  const base64 = (text: string) => Buffer.from(text).toString("base64");
  await client.apply(
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secretName, namespace },
      type: "kubernetes.io/tls",
      data: { "tls.crt": base64(serving.cert), "tls.key": base64(serving.key), "ca.crt": base64(ca.cert) },
    },
    { fieldManager: FIELD_MANAGER, force: true },
  );
  console.log(`  created the webhook serving certificate in Secret ${namespace}/${secretName}`);
  return base64(ca.cert);
}
