import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ControlPlane,
  killOperators,
  kubectl,
  type OperatorProcess,
  readCrds,
  readManifests,
  revokeRule,
  startOperator,
} from "kubeloop/testing";
import { PostgresServer } from "kubeloop/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The operator installed as its generated config says — its ServiceAccount, bound only to the
// generated roles, with a token from the TokenRequest API — on an API server that enforces owner
// reference permissions (as OpenShift and CIS-benchmarked distributions do): the credentials
// Secret it owns by a blockOwnerDeletion reference is allowed only by `update` on pgdatabases/finalizers.

const root = join(import.meta.dirname, "..");
const NAMESPACE = "pgdatabase-operator-system";
const IDENTITY = `system:serviceaccount:${NAMESPACE}:pgdatabase-operator`;
/** The API server's words when a child's owner reference blocks deletion of an owner it may not finalize. */
const BLOCK_OWNER_DELETION_FORBIDDEN =
  "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on";

let plane: ControlPlane;
let postgres: PostgresServer;
let backupDir: string;
let operator: OperatorProcess;

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });

async function jsonpath(args: string[], path: string): Promise<string> {
  return (await k([...args, "-o", `jsonpath=${path}`])).stdout;
}

const readyOf = (name: string, field: "status" | "message") =>
  jsonpath(["-n", "shop", "get", "pgdatabase", name], `{.status.conditions[?(@.type=="Ready")].${field}}`);

beforeAll(async () => {
  [postgres, plane] = await Promise.all([
    new PostgresServer().start(),
    new ControlPlane({ profile: "apiserver", hardened: true }).start(),
  ]);
  backupDir = mkdtempSync(join(tmpdir(), "pgdatabase-backups-"));
  await plane.installCrdObjects(readCrds([join(root, "config/crd")]));
  // What `kubeloop deploy` installs, but for the Deployment: the operator runs here as a process.
  const install = await k(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: readManifests(
        [
          "config/manager/namespace.yaml",
          "config/manager/service-account.yaml",
          "config/rbac",
          "config/manager/role-bindings.yaml",
          "config/manager/metrics-auth-binding.yaml",
        ].map((file) => join(root, file)),
      ),
    }),
  );
  expect(install.code, install.stderr).toBe(0);
  // The admin's Secret for the server, in the namespace of the PgDatabases.
  expect((await k(["create", "namespace", "shop"])).code).toBe(0);
  const secret = await k(
    ["-n", "shop", "create", "secret", "generic", "pg-admin"].concat(
      Object.entries({
        host: postgres.host,
        port: String(postgres.port),
        username: postgres.user,
        password: postgres.password,
      }).map(([key, value]) => `--from-literal=${key}=${value}`),
    ),
  );
  expect(secret.code, secret.stderr).toBe(0);
  // The Deployment's settings (config/manager/deployment.yaml), but for the ports: 0 picks free ones.
  operator = startOperator("src/main.ts", {
    cwd: root,
    env: {
      KUBECONFIG: (await plane.serviceAccountUser(NAMESPACE, "pgdatabase-operator")).kubeconfigPath,
      POD_NAMESPACE: NAMESPACE,
      LEADER_ELECT: "true",
      METRICS_PORT: "0",
      PROBE_PORT: "0",
      BACKUP_DIR: backupDir,
      PG_BIN: postgres.binDir,
    },
  });
});
afterAll(async () => {
  killOperators();
  await Promise.all([plane?.stop(), postgres?.stop()]);
  if (backupDir) rmSync(backupDir, { recursive: true, force: true });
});

describe("PgDatabase operator on a hardened API server, as its ServiceAccount with the generated RBAC", () => {
  it("turns the sample PgDatabase into a database and a credentials Secret it owns", async () => {
    const applied = await k(["-n", "shop", "apply", "-f", join(root, "config/samples/pgdatabase.yaml")]);
    expect(applied.code, applied.stderr).toBe(0);
    await operator.waitUntil(async () => (await readyOf("shop", "status")) === "True", {
      timeoutMs: 30_000,
      message: "Ready=True",
    });
    expect(await postgres.psql("select datname from pg_database where datname = 'shop'")).toBe("shop");
    const owner = JSON.parse(
      await jsonpath(["-n", "shop", "get", "secret", "shop-credentials"], "{.metadata.ownerReferences[0]}"),
    ) as { kind: string; name: string; controller: boolean; blockOwnerDeletion: boolean };
    expect(owner).toMatchObject({
      kind: "PgDatabase",
      name: "shop",
      controller: true,
      blockOwnerDeletion: true,
    });
    // The operator's own identity wrote the Secret, not an admin.
    const writes = plane
      .auditRecords()
      .filter(
        (r) =>
          r.objectRef?.resource === "secrets" &&
          r.objectRef.name === "shop-credentials" &&
          r.user.username === IDENTITY,
      );
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((r) => (r.responseStatus?.code ?? 0) < 300)).toBe(true);
  });

  it("without update on pgdatabases/finalizers is refused the credentials Secret, and says why in Ready", async () => {
    // The failure this grant prevents, reproduced: take the rule away from the running operator.
    await revokeRule({
      kubeconfig: plane.kubeconfigPath,
      role: "clusterrole/pgdatabase-operator",
      resource: "pgdatabases/finalizers",
      as: IDENTITY,
    });
    const applied = await k(
      ["-n", "shop", "apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "db.example.com/v1alpha1",
        kind: "PgDatabase",
        metadata: { name: "blocked" },
        spec: { server: { secretName: "pg-admin" } },
      }),
    );
    expect(applied.code, applied.stderr).toBe(0);
    let message = "";
    await operator.waitUntil(
      async () => {
        message = await readyOf("blocked", "message");
        return message.includes("forbidden");
      },
      { timeoutMs: 30_000, message: "the Ready condition to report the refusal" },
    );
    expect(message).toContain(
      `secrets "blocked-credentials" is forbidden: ${BLOCK_OWNER_DELETION_FORBIDDEN}`,
    );
    expect((await k(["-n", "shop", "get", "secret", "blocked-credentials"])).stderr).toContain("NotFound");
  });
});
