import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";

/**
 * The kube-apiserver settings of a hardened cluster (OpenShift, CIS-benchmarked distributions),
 * for a control plane started with `hardened: true`: what passes on a bare API server but fails
 * there is found in tests, not by the first user who installs on one.
 *
 * - Admission: `OwnerReferencesPermissionEnforcement` (a `blockOwnerDeletion` owner reference needs
 *   `update` on the owner's finalizers), `PodSecurity` with `restricted` enforced on every namespace
 *   without a label of its own (not only those labelled), `AlwaysPullImages`, `NodeRestriction`,
 *   and `EventRateLimit`.
 * - Authorization `Node,RBAC`; anonymous requests refused (401, /healthz and /readyz included).
 * - Audit logging of every request at the Metadata level (who did what to which object), to
 *   `logs/audit.log`: tests read it to see which identity made a write.
 */

export const HARDENED_ADMISSION_PLUGINS = [
  "OwnerReferencesPermissionEnforcement",
  "PodSecurity",
  "AlwaysPullImages",
  "NodeRestriction",
  "EventRateLimit",
] as const;

/**
 * Events per second the whole server accepts (and its burst). RKE2's CIS profile uses these; a
 * test that records many events should not be throttled by accident, only a runaway loop.
 */
const EVENT_LIMIT = { type: "Server", qps: 5000, burst: 20000 };

/** Where the audit log goes, under the plane's folder (kept with the other logs). */
export function auditLogPathIn(dir: string): string {
  return join(dir, "logs", "audit.log");
}

/** One request in the audit log: who (`user`), what (`verb`, `objectRef`), and the answer's code. */
export interface AuditRecord {
  verb: string;
  user: { username: string; groups?: string[] };
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
  responseStatus?: { code?: number };
}

/** The records of an audit log (JSON lines), oldest first: a test reads who made which request. */
export function readAuditLog(path: string): AuditRecord[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as AuditRecord);
}

/**
 * Writes the admission configuration and the audit policy into `dir` and returns the flags that
 * use them. `dir` is the plane's folder.
 */
export function hardenedApiServerArgs(dir: string): string[] {
  const admissionPath = join(dir, "admission.yaml");
  const auditPolicyPath = join(dir, "audit-policy.yaml");
  writeFileSync(admissionPath, stringify(admissionConfiguration()));
  writeFileSync(auditPolicyPath, stringify(AUDIT_POLICY));
  return [
    `--enable-admission-plugins=${HARDENED_ADMISSION_PLUGINS.join(",")}`,
    `--admission-control-config-file=${admissionPath}`,
    "--anonymous-auth=false",
    `--audit-policy-file=${auditPolicyPath}`,
    // The log backend's default mode (blocking) writes each record before the response is sent,
    // so a test reads a write's record right after it.
    `--audit-log-path=${auditLogPathIn(dir)}`,
    // The CIS benchmark's retention, so a long-lived `kubeloop cluster start --hardened` stays bounded.
    "--audit-log-maxsize=100",
    "--audit-log-maxbackup=10",
    "--audit-log-maxage=30",
  ];
}

function admissionConfiguration() {
  return {
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "AdmissionConfiguration",
    plugins: [
      {
        name: "PodSecurity",
        configuration: {
          apiVersion: "pod-security.admission.config.k8s.io/v1",
          kind: "PodSecurityConfiguration",
          // The namespace label `pod-security.kubernetes.io/enforce` still overrides it, as on the
          // clusters this imitates.
          defaults: {
            enforce: "restricted",
            "enforce-version": "latest",
            warn: "restricted",
            "warn-version": "latest",
            audit: "restricted",
            "audit-version": "latest",
          },
          // No system pods run in the test plane, but hardened clusters exempt this one.
          exemptions: { usernames: [], runtimeClasses: [], namespaces: ["kube-system"] },
        },
      },
      {
        name: "EventRateLimit",
        configuration: {
          apiVersion: "eventratelimit.admission.k8s.io/v1alpha1",
          kind: "Configuration",
          limits: [EVENT_LIMIT],
        },
      },
    ],
  };
}

/** Who did what to which object, without bodies (they may hold secrets); one line per request. */
const AUDIT_POLICY = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  omitStages: ["RequestReceived"],
  rules: [{ level: "Metadata" }],
};
