import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ControlPlaneError } from "../errors.js";
import type { AdminHttp } from "../http.js";
import { type KubeconfigSpec, renderKubeconfig } from "../kubeconfig.js";
import { CertificateAuthority, generateKeyPair, type IssuedCert } from "../pki.js";
import { HOST, KUBERNETES_SERVICE_IP } from "./component.js";

/**
 * The plane's identities on disk, under `<dir>/pki`: a CA, the API server's serving certificate,
 * the service-account signing key, the admin's client certificate; and kubeconfigs (the admin's,
 * users', ServiceAccounts'), every one with its credentials inlined and readable by its owner only.
 */

export interface PlanePki {
  ca: CertificateAuthority;
  /** The admin's client certificate (user `kubeloop-admin`, group `system:masters`). */
  admin: IssuedCert;
  caPath: string;
  caKeyPath: string;
  servingCertPath: string;
  servingKeyPath: string;
  saPublicPath: string;
  saPrivatePath: string;
  /** The API server's client certificate to kubelets (group system:masters). */
  kubeletClientCertPath: string;
  kubeletClientKeyPath: string;
  /** The front proxy's client certificate, which aggregated API servers trust. */
  frontProxyCertPath: string;
  frontProxyKeyPath: string;
}

/**
 * A fresh CA and the certificates and keys signed by it, written under `<dir>/pki`. `hostIp` is the
 * API server's address when it is not loopback (the `node` profile), which its certificate must name.
 */
export function writePlanePki(dir: string, hostIp?: string): PlanePki {
  const pkiDir = join(dir, "pki");
  const ca = CertificateAuthority.create("kubeloop-ca");
  const serving = ca.issueServing({
    commonName: "kube-apiserver",
    dnsNames: [
      "localhost",
      "kubernetes",
      "kubernetes.default",
      "kubernetes.default.svc",
      "kubernetes.default.svc.cluster.local",
    ],
    ipAddresses: [HOST, KUBERNETES_SERVICE_IP, ...(hostIp ? [hostIp] : [])],
  });
  const sa = generateKeyPair();
  const pki: PlanePki = {
    ca,
    admin: ca.issueClient({ user: "kubeloop-admin", groups: ["system:masters"] }),
    caPath: join(pkiDir, "ca.crt"),
    caKeyPath: join(pkiDir, "ca.key"),
    servingCertPath: join(pkiDir, "apiserver.crt"),
    servingKeyPath: join(pkiDir, "apiserver.key"),
    saPublicPath: join(pkiDir, "sa.pub"),
    saPrivatePath: join(pkiDir, "sa.key"),
    kubeletClientCertPath: join(pkiDir, "apiserver-kubelet-client.crt"),
    kubeletClientKeyPath: join(pkiDir, "apiserver-kubelet-client.key"),
    frontProxyCertPath: join(pkiDir, "front-proxy-client.crt"),
    frontProxyKeyPath: join(pkiDir, "front-proxy-client.key"),
  };
  writeFileSync(pki.caPath, ca.cert);
  writeFileSync(pki.caKeyPath, ca.privateKeyPem(), { mode: 0o600 });
  writeFileSync(pki.servingCertPath, serving.cert);
  writeFileSync(pki.servingKeyPath, serving.key, { mode: 0o600 });
  writeFileSync(pki.saPublicPath, sa.publicKey);
  writeFileSync(pki.saPrivatePath, sa.privateKey, { mode: 0o600 });
  const kubeletClient = ca.issueClient({ user: "kube-apiserver-kubelet-client", groups: ["system:masters"] });
  writeFileSync(pki.kubeletClientCertPath, kubeletClient.cert);
  writeFileSync(pki.kubeletClientKeyPath, kubeletClient.key, { mode: 0o600 });
  const frontProxy = ca.issueClient({ user: "front-proxy-client" });
  writeFileSync(pki.frontProxyCertPath, frontProxy.cert);
  writeFileSync(pki.frontProxyKeyPath, frontProxy.key, { mode: 0o600 });
  return pki;
}

/** Writes a kubeconfig (credentials inlined) that only its owner may read; creates its folder. */
export function writeKubeconfig(path: string, spec: KubeconfigSpec): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, renderKubeconfig(spec), { mode: 0o600 });
}

/**
 * A token for a ServiceAccount from the TokenRequest API (what a pod's projected token is).
 * Throws naming the ServiceAccount when the API server refuses, e.g. because it does not exist.
 */
export async function mintServiceAccountToken(
  admin: AdminHttp,
  namespace: string,
  name: string,
  expirationSeconds: number,
): Promise<string> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`;
  const minted = await admin.post<{ status?: { token?: string }; message?: string }>(path, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: { expirationSeconds },
  });
  const token = minted.body?.status?.token;
  if (minted.status !== 201 || !token) {
    throw new ControlPlaneError(
      `Could not mint a token for ServiceAccount ${namespace}/${name} (HTTP ${minted.status}): ` +
        `${minted.body?.message ?? minted.text}. Create the ServiceAccount first.`,
    );
  }
  return token;
}
