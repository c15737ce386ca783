import { stringify } from "yaml";

/** The connection a kubeconfig describes: one cluster, one user, one context. */
export interface KubeconfigSpec {
  server: string;
  /** PEM of the CA that signed the server's certificate. */
  caCert: string;
  /** How the user authenticates: a PEM client certificate and key, or a bearer token. */
  clientCert?: string;
  clientKey?: string;
  token?: string;
  clusterName?: string;
  userName?: string;
  contextName?: string;
  namespace?: string;
}

/** A self-contained kubeconfig (credentials inlined), readable by kubectl and every client library. */
export function renderKubeconfig(spec: KubeconfigSpec): string {
  const cluster = spec.clusterName ?? "kubeloop";
  const user = spec.userName ?? "kubeloop-admin";
  const context = spec.contextName ?? cluster;
  const b64 = (pem: string) => Buffer.from(pem).toString("base64");
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: cluster, cluster: { server: spec.server, "certificate-authority-data": b64(spec.caCert) } },
    ],
    users: [
      {
        name: user,
        user:
          spec.token !== undefined
            ? { token: spec.token }
            : {
                "client-certificate-data": b64(spec.clientCert ?? ""),
                "client-key-data": b64(spec.clientKey ?? ""),
              },
      },
    ],
    contexts: [
      {
        name: context,
        context: { cluster, user, ...(spec.namespace ? { namespace: spec.namespace } : {}) },
      },
    ],
    "current-context": context,
    preferences: {},
  });
}
