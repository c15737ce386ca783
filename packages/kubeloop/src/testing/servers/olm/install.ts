import { join } from "node:path";
import { pollUntil } from "../../../util/index.js";
import { kubectl } from "../../kubectl.js";
import { type OlmPlane, olmAssets, olmImage, pushToPlaneRegistry } from "./images.js";

/** What {@link installOlm} installed. */
export interface OlmInstall {
  /** Where olm-operator and catalog-operator run, and where CatalogSources go (`olm`). */
  namespace: string;
  /** The namespace whose OperatorGroup (`global-operators`) watches every namespace (`operators`). */
  globalNamespace: string;
  /** OLM's image in the plane's registry. */
  image: string;
}

const NAMESPACE = "olm";
const GLOBAL = "operators";

/**
 * Installs OLM v0 on a node-profile plane as upstream's release manifests do: its CRDs, olm-operator
 * and catalog-operator as Deployments in `olm` (their image made here from the binaries built from
 * OLM's Go module, pushed to the plane's registry with the utilities their pods run), and the
 * `global-operators` OperatorGroup in `operators`. OLM's packageserver (the PackageManifest API for
 * consoles) is left out. Resolves once both operators are Ready.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 * import { installOlm } from "kubeloop/testing/servers";
 *
 * const plane = await new ControlPlane({ profile: "node", nodes: 1 }).start();
 * const olm = await installOlm(plane);
 * // A CatalogSource in olm.namespace, a Subscription in olm.globalNamespace.
 * ```
 */
export async function installOlm(plane: OlmPlane): Promise<OlmInstall> {
  const dir = await olmAssets();
  const image = `${plane.registry}/olm:v${dir.split("-v").pop()}`;
  await pushToPlaneRegistry(plane, olmImage(dir, image), image);
  const k = async (args: string[], input?: string) => {
    const result = await kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };
  // Server-side: the CSV CRD is too big for the last-applied annotation.
  await k(["apply", "--server-side", "-f", join(dir, "crds")]);
  await k(["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"]);
  await k(["apply", "-f", "-"], manifests(image));
  for (const name of ["olm-operator", "catalog-operator"]) {
    await k(["-n", NAMESPACE, "rollout", "status", `deployment/${name}`, "--timeout=120s"]).catch(
      async (error) => {
        const logs = await kubectl(["-n", NAMESPACE, "logs", `deployment/${name}`, "--tail=30"], {
          kubeconfig: plane.kubeconfigPath,
        });
        throw new Error(`${(error as Error).message}\n${name}'s log:\n${logs.stdout}${logs.stderr}`);
      },
    );
  }
  // olm-operator makes the OperatorGroup's ClusterRoles; Subscriptions wait for them otherwise.
  await pollUntil(
    async () =>
      (await k([
        "-n",
        GLOBAL,
        "get",
        "operatorgroup",
        "global-operators",
        "-o",
        "jsonpath={.status.lastUpdated}",
      ])) !== "",
    { timeoutMs: 60_000, intervalMs: 500, message: "OLM to handle the global OperatorGroup" },
  );
  return { namespace: NAMESPACE, globalNamespace: GLOBAL, image };
}

/** Upstream's deploy/chart rendered for this plane: no packageserver, no cert-manager, no status writes. */
function manifests(image: string): string {
  const deployment = (name: string, command: string, args: string[]) => `---
apiVersion: apps/v1
kind: Deployment
metadata: { name: ${name}, namespace: ${NAMESPACE}, labels: { app: ${name} } }
spec:
  strategy: { type: Recreate }
  selector: { matchLabels: { app: ${name} } }
  template:
    metadata: { labels: { app: ${name} } }
    spec:
      serviceAccountName: olm-operator-serviceaccount
      securityContext: { runAsNonRoot: true, seccompProfile: { type: RuntimeDefault } }
      volumes: [{ name: tmpfs, emptyDir: {} }]
      containers:
        - name: ${name}
          image: ${image}
          command: [${command}]
          args: ${JSON.stringify(args)}
          env:
            - { name: OPERATOR_NAMESPACE, valueFrom: { fieldRef: { fieldPath: metadata.namespace } } }
            - { name: OPERATOR_NAME, value: ${name} }
          ports: [{ name: metrics, containerPort: 8080 }]
          readinessProbe: { httpGet: { path: /healthz, port: 8080 }, periodSeconds: 2 }
          livenessProbe: { httpGet: { path: /healthz, port: 8080 } }
          volumeMounts: [{ name: tmpfs, mountPath: /tmp }]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: { drop: [ALL] }
          resources: { requests: { cpu: 10m, memory: 160Mi } }
`;
  const olmArgs = ["--namespace", NAMESPACE, "--writeStatusName", "", "--writePackageServerStatusName", ""];
  // The unpack Jobs and catalog pods run OLM's utilities from OLM's own image, as upstream's do.
  const utilities = ["--configmapServerImage", image, "--opmImage", image, "--util-image", image];
  const catalogArgs = ["--namespace", NAMESPACE, ...utilities, "--writeStatusName", ""];
  return `apiVersion: v1
kind: Namespace
metadata: { name: ${NAMESPACE} }
---
apiVersion: v1
kind: Namespace
metadata: { name: ${GLOBAL} }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: olm-operator-serviceaccount, namespace: ${NAMESPACE} }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: "system:controller:operator-lifecycle-manager" }
rules:
  - { apiGroups: ["*"], resources: ["*"], verbs: [watch, list, get, create, update, patch, delete, deletecollection, escalate, bind] }
  - { nonResourceURLs: ["*"], verbs: ["*"] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: olm-operator-binding-${NAMESPACE} }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:controller:operator-lifecycle-manager" }
subjects: [{ kind: ServiceAccount, name: olm-operator-serviceaccount, namespace: ${NAMESPACE} }]
---
apiVersion: operators.coreos.com/v1
kind: OLMConfig
metadata: { name: cluster }
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: { name: global-operators, namespace: ${GLOBAL} }
${deployment("olm-operator", "/bin/olm", olmArgs)}${deployment("catalog-operator", "/bin/catalog", catalogArgs)}`;
}
