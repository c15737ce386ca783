import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  PostgresServer,
  readCrds,
  readManifests,
} from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killOperators, type Operator, root, startOperator, until } from "./operator.ts";

// Composition across operators, end to end: MyApp's operator and SampleDB's operator run as their
// own processes against one cluster and a real PostgreSQL; MyApp asks for a database through
// SampleDB's API only.

let plane: ControlPlane;
let postgres: PostgresServer;
let serving: LocalWebhookServing;
let myapp: Operator;
let backupDir: string;
const NS = "db";

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
const get = async (args: string[], path: string) =>
  (await k(["-n", NS, ...args, "-o", `jsonpath=${path}`])).stdout;
const condition = (type: string, field = "status") =>
  get(["get", "myapp", "web"], `{.status.conditions[?(@.type=="${type}")].${field}}`);

beforeAll(async () => {
  serving = await localWebhookServing();
  [plane, postgres] = await Promise.all([
    new ControlPlane({ profile: "cluster" }).start(),
    new PostgresServer().start(),
  ]);
  backupDir = mkdtempSync(join(tmpdir(), "myapp-sampledb-backups-"));
  await plane.installCrdObjects(
    serving.rewrite(
      readManifests([join(root, "config/crd/myapps.apps.example.com.yaml")]),
    ) as unknown as CrdObject[],
  );
  myapp = await startOperator("src/main.ts", {
    KUBECONFIG: plane.kubeconfigPath,
    WEBHOOK_CERT_DIR: serving.certDir,
    WEBHOOK_PORT: String(serving.port),
  });
  expect((await k(["create", "namespace", NS])).code).toBe(0);
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "pg-admin", namespace: NS },
    stringData: {
      host: postgres.host,
      port: String(postgres.port),
      username: postgres.user,
      password: postgres.password,
    },
  };
  expect((await k(["apply", "-f", "-"], JSON.stringify(secret))).code).toBe(0);
});
afterAll(async () => {
  killOperators();
  await Promise.all([plane?.stop(), postgres?.stop()]);
  serving?.dispose();
  if (backupDir) rmSync(backupDir, { recursive: true, force: true });
});

describe("MyApp with a SampleDB database", () => {
  it("says the SampleDB CRD is not installed in a condition, without failing reconciles or a Deployment", async () => {
    const app = {
      apiVersion: "apps.example.com/v1",
      kind: "MyApp",
      metadata: { name: "web", namespace: NS },
      spec: { replicas: 1, version: "1.0", database: { enabled: true, serverSecret: "pg-admin" } },
    };
    const applied = await k(["apply", "-f", "-"], JSON.stringify(app));
    expect(applied.code, applied.stderr).toBe(0);
    await until(
      async () => (await condition("DatabaseReady", "reason")) === "SampleDBNotInstalled",
      30_000,
      "DatabaseReady=False",
    );
    expect(await condition("DatabaseReady")).toBe("False");
    expect(await condition("DatabaseReady", "message")).toBe(
      "spec.database.enabled needs the SampleDB operator, but its CRD (sampledbs.db.example.com) is not installed: install it, or set spec.database.enabled to false",
    );
    expect(await condition("Ready", "reason")).toBe("SampleDBNotInstalled");
    expect(await get(["get", "myapp", "web"], "{.status.phase}")).toBe("Pending");
    expect((await k(["-n", NS, "get", "deployment", "web"])).stderr).toContain("NotFound");
    expect(myapp.process.exitCode).toBeNull();
    expect(myapp.output()).not.toMatch(/reconcile failed/);
  });

  it("owns a SampleDB, waits for it, wires its credentials Secret into the pods, and is Ready only when both are", async () => {
    await plane.installCrdObjects(readCrds([join(root, "../sampledb/config/crd")]));
    const sampledb = await startOperator("../sampledb/src/main.ts", {
      KUBECONFIG: plane.kubeconfigPath,
      BACKUP_DIR: backupDir,
      PG_BIN: postgres.binDir,
    });
    // A change to the MyApp looks again at once (a missing CRD is otherwise rechecked every minute).
    expect((await k(["-n", NS, "annotate", "myapp", "web", "example.com/poke=1"])).code).toBe(0);
    const seen: string[] = [];
    await until(
      async () => {
        const [app, db] = await Promise.all([
          condition("Ready"),
          get(["get", "sampledb", "web-db"], '{.status.conditions[?(@.type=="Ready")].status}'),
        ]);
        seen.push(`${app}/${db}`);
        return app === "True";
      },
      90_000,
      "MyApp Ready=True",
    );
    // Never Ready before its database was.
    expect(seen.filter((s) => s.startsWith("True/") && s !== "True/True")).toEqual([]);
    expect(await get(["get", "sampledb", "web-db"], '{.status.conditions[?(@.type=="Ready")].status}')).toBe(
      "True",
    );
    expect(
      await get(
        ["get", "sampledb", "web-db"],
        "{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].controller}",
      ),
    ).toBe("MyApp true");
    expect(
      await get(
        ["get", "deployment", "web"],
        "{.spec.template.spec.containers[0].env[0].name} {.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name} {.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.key}",
      ),
    ).toBe("DATABASE_URL web-db-credentials uri");
    expect(await get(["get", "secret", "web-db-credentials"], "{.data.uri}")).not.toBe("");
    expect(await condition("DatabaseReady")).toBe("True");
    expect(await get(["get", "myapp", "web"], "{.status.phase}")).toBe("Running");
    expect(myapp.output()).not.toMatch(/reconcile failed/);
    expect(sampledb.process.exitCode).toBeNull();
  });

  it("deleting the MyApp deletes its SampleDB, and the SampleDB operator's deletion policy drops the database", async () => {
    const databaseName = await get(["get", "sampledb", "web-db"], "{.status.databaseName}");
    expect(await postgres.psql(`select count(*) from pg_database where datname = '${databaseName}'`)).toBe(
      "1",
    );
    expect((await k(["-n", NS, "delete", "myapp", "web", "--wait=true"])).code).toBe(0);
    const gone = await k(["-n", NS, "wait", "--for=delete", "sampledb/web-db", "--timeout=90s"]);
    expect(gone.code, gone.stderr).toBe(0);
    expect(await postgres.psql(`select count(*) from pg_database where datname = '${databaseName}'`)).toBe(
      "0",
    );
  });
});
