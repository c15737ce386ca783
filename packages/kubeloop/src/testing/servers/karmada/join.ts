import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { mintServiceAccountToken } from "../../control-plane/credentials.js";
import { ControlPlaneError } from "../../errors.js";
import { AdminHttp } from "../../http.js";
import { KARMADA_CLUSTER_NAMESPACE } from "./components.js";

/**
 * Push-mode join, as `karmadactl join` does it, with the plane's admin access instead of a binary:
 * on the member, a ServiceAccount bound to cluster-admin and a token for it; on Karmada, a Secret
 * with that token and the member's CA, and a Cluster naming the member's API endpoint and the
 * Secret, labelled with its region. Karmada's controllers then reach the member with that token.
 */

/** The region label Karmada's placements select members by (the well-known Kubernetes one). */
export const REGION_LABEL = "topology.kubernetes.io/region";

export interface JoinSpec {
  name: string;
  region: string;
  /** The member's API server URL and CA. */
  server: string;
  caCert: string;
  /** The member's admin kubeconfig (client certificate inlined, as the plane writes it). */
  kubeconfigPath: string;
  /** Extra labels on the Cluster object. */
  labels?: Record<string, string>;
}

/** How long Karmada's member token lives: a month outlasts any test run or `kubeloop cluster` session. */
const TOKEN_SECONDS = 30 * 24 * 3600;

/** An admin's API access from a kubeconfig the plane wrote (client certificate and key inlined). */
export function adminFromKubeconfig(path: string): AdminHttp {
  const config = parse(readFileSync(path, "utf8")) as {
    clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
    users: { user: { "client-certificate-data"?: string; "client-key-data"?: string } }[];
  };
  const cluster = config.clusters[0]?.cluster;
  const user = config.users[0]?.user;
  if (!cluster || !user?.["client-certificate-data"] || !user["client-key-data"])
    throw new ControlPlaneError(`${path} is not an admin kubeconfig with an inlined client certificate`);
  const pem = (b64: string) => Buffer.from(b64, "base64").toString("utf8");
  return new AdminHttp({
    server: cluster.server,
    caCert: pem(cluster["certificate-authority-data"]),
    clientCert: pem(user["client-certificate-data"]),
    clientKey: pem(user["client-key-data"]),
  });
}

/** Creates `object` at `path`; an object that exists already is fine (a join is repeatable). */
export async function createOrKeep(
  admin: AdminHttp,
  path: string,
  object: object,
  what: string,
): Promise<void> {
  const created = await admin.post(path, object);
  if (created.status !== 201 && created.status !== 409)
    throw new ControlPlaneError(`Could not create ${what} (HTTP ${created.status}): ${created.text}`);
}

/** Joins the member to Karmada in push mode; resolves once the Cluster exists (see {@link waitClusterReady}). */
export async function joinMember(karmada: AdminHttp, member: JoinSpec): Promise<void> {
  const memberAdmin = adminFromKubeconfig(member.kubeconfigPath);
  const account = `karmada-${member.name}`;
  try {
    const ns = KARMADA_CLUSTER_NAMESPACE;
    await createOrKeep(memberAdmin, "/api/v1/namespaces", namespace(ns), `namespace ${ns} on ${member.name}`);
    await createOrKeep(
      memberAdmin,
      `/api/v1/namespaces/${ns}/serviceaccounts`,
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: account, namespace: ns } },
      `ServiceAccount ${account} on ${member.name}`,
    );
    await createOrKeep(
      memberAdmin,
      "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: account },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ kind: "ServiceAccount", name: account, namespace: ns }],
      },
      `ClusterRoleBinding ${account} on ${member.name}`,
    );
    const token = await mintServiceAccountToken(memberAdmin, ns, account, TOKEN_SECONDS);
    await createOrKeep(karmada, "/api/v1/namespaces", namespace(ns), `namespace ${ns} on Karmada`);
    const secretData = {
      token: Buffer.from(token).toString("base64"),
      caBundle: Buffer.from(member.caCert).toString("base64"),
    };
    for (const name of [member.name, `${member.name}-impersonator`]) {
      await createOrKeep(
        karmada,
        `/api/v1/namespaces/${ns}/secrets`,
        { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: ns }, data: secretData },
        `Secret ${ns}/${name} on Karmada`,
      );
    }
    await createOrKeep(
      karmada,
      "/apis/cluster.karmada.io/v1alpha1/clusters",
      {
        apiVersion: "cluster.karmada.io/v1alpha1",
        kind: "Cluster",
        metadata: { name: member.name, labels: { [REGION_LABEL]: member.region, ...member.labels } },
        spec: {
          syncMode: "Push",
          apiEndpoint: member.server,
          region: member.region,
          secretRef: { namespace: ns, name: member.name },
          impersonatorSecretRef: { namespace: ns, name: `${member.name}-impersonator` },
        },
      },
      `Cluster ${member.name} on Karmada`,
    );
  } finally {
    memberAdmin.close();
  }
}

/** True once Karmada's cluster-status controller reports the member Ready. */
export async function clusterReady(karmada: AdminHttp, name: string): Promise<boolean> {
  const cluster = await karmada.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
    `/apis/cluster.karmada.io/v1alpha1/clusters/${name}`,
  );
  if (cluster.status !== 200) return false;
  return cluster.body.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

function namespace(name: string): object {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
}
