import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ControlPlane,
  type CrdObject,
  killOperators,
  kubectl,
  type LocalWebhookServing,
  localWebhookServing,
  readCrds,
  readManifests,
} from "kubeloop/testing";
import { PostgresServer } from "kubeloop/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Operator, root, startOperator, until } from "./operator.ts";

// End to end, as a user would: the operator runs as its own process against a simulated cluster
// whose pods with an image tag containing "broken" never become ready, beside a real PostgreSQL
// for PgDatabase, and everything is checked through kubectl (and SQL for the database).

let plane: ControlPlane;
let postgres: PostgresServer;
let serving: LocalWebhookServing;
let operator: Operator;
let backupDir: string;
const NS = "shop";
/** Short, so a failed rollout shows in seconds; the operator's reaction is what is measured. */
const DEADLINE_SECONDS = 5;

const k = (args: string[], input?: string) =>
  kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
const get = async (args: string[], path: string) =>
  (await k(["-n", NS, ...args, "-o", `jsonpath=${path}`])).stdout;
const condition = (type: string, field = "status") =>
  get(["get", "myapp", "shop"], `{.status.conditions[?(@.type=="${type}")].${field}}`);
const patchVersion = (version: string) =>
  k(["-n", NS, "patch", "myapp", "shop", "--type=merge", "-p", JSON.stringify({ spec: { version } })]);
const history = async () =>
  JSON.parse((await get(["get", "myapp", "shop"], "{.status.history}")) || "[]") as {
    version: string;
    outcome: string;
    message?: string;
  }[];

// With a database: MyApp's operator and PgDatabase's operator run as their own processes against the
// same cluster and a real PostgreSQL; MyApp asks for a database through PgDatabase's API only.
const DB_NS = "db";
const dbGet = async (args: string[], path: string) =>
  (await k(["-n", DB_NS, ...args, "-o", `jsonpath=${path}`])).stdout;
const dbCondition = (type: string, field = "status") =>
  dbGet(["get", "myapp", "web"], `{.status.conditions[?(@.type=="${type}")].${field}}`);

beforeAll(async () => {
  serving = await localWebhookServing();
  [plane, postgres] = await Promise.all([
    new ControlPlane({
      profile: "cluster",
      podBehaviours: [
        { pods: { imageTagContains: "broken" }, behaviour: "never-ready" },
        { pods: { imageTagContains: "crash" }, behaviour: "crash-loop", restartEverySeconds: 2 },
      ],
    }).start(),
    new PostgresServer().start(),
  ]);
  backupDir = mkdtempSync(join(tmpdir(), "myapp-pgdatabase-backups-"));
  await plane.installCrdObjects(
    serving.rewrite(
      readManifests([join(root, "config/crd/myapps.apps.example.com.yaml")]),
    ) as unknown as CrdObject[],
  );
  operator = await startOperator("src/main.ts", {
    KUBECONFIG: plane.kubeconfigPath,
    WEBHOOK_CERT_DIR: serving.certDir,
    WEBHOOK_PORT: String(serving.port),
  });
  expect((await k(["create", "namespace", NS])).code).toBe(0);
  expect((await k(["create", "namespace", DB_NS])).code).toBe(0);
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "pg-admin", namespace: DB_NS },
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

describe("MyApp rollouts", () => {
  it("rolls out a good version: a Deployment at that tag and a Service, Ready, recorded in history", async () => {
    const [app] = readManifests([join(root, "config/samples/myapp.yaml")]) as {
      spec: { rollout: { progressDeadlineSeconds: number } };
    }[];
    if (!app) throw new Error("config/samples/myapp.yaml is empty");
    app.spec.rollout.progressDeadlineSeconds = DEADLINE_SECONDS;
    const applied = await k(["-n", NS, "apply", "-f", "-"], JSON.stringify(app));
    expect(applied.code, applied.stderr).toBe(0);
    await until(async () => (await condition("Ready")) === "True", 60_000, "Ready=True");
    expect(await get(["get", "myapp", "shop"], "{.status.currentVersion} {.status.phase}")).toBe(
      "1.0 Running",
    );
    expect(await history()).toMatchObject([{ version: "1.0", outcome: "Succeeded" }]);
    expect(
      await get(
        ["get", "deployment", "shop"],
        "{.spec.template.spec.containers[0].image} {.status.readyReplicas}",
      ),
    ).toBe("registry.example.com/myapp:1.0 2");
    expect(await get(["get", "service", "shop"], "{.metadata.ownerReferences[0].kind}")).toBe("MyApp");
    const table = await k(["-n", NS, "get", "myapp", "shop"]);
    expect(table.stdout).toMatch(
      /NAME\s+REPLICAS\s+VERSION\s+CURRENT\s+PHASE\s+READY\s+AGE\nshop\s+2\s+1\.0\s+1\.0\s+Running\s+True/,
    );
  });

  it("rolls a version that never becomes ready back to the last healthy one within the deadline and one reconcile", async () => {
    const started = Date.now();
    expect((await patchVersion("1.1-broken")).code).toBe(0);
    await until(async () => (await condition("RolledBack")) === "True", 60_000, "RolledBack=True");
    const elapsed = (Date.now() - started) / 1000;
    console.log(`rolled back ${elapsed.toFixed(1)} s after the change (deadline ${DEADLINE_SECONDS} s)`);
    // The deadline, the Deployment controller's next check, one reconcile, and kubectl polling.
    expect(elapsed).toBeLessThan(DEADLINE_SECONDS + 20);
    expect(await condition("RolledBack", "reason")).toBe("ProgressDeadlineExceeded");
    expect(await condition("RolledBack", "message")).toMatch(
      /^1\.1-broken did not become available within 5s .*rolled back to 1\.0$/,
    );
    expect(await condition("Degraded")).toBe("True");
    expect(
      await get(["get", "myapp", "shop"], "{.status.currentVersion} {.status.failedVersion} {.status.phase}"),
    ).toBe("1.0 1.1-broken Degraded");
    expect(await history()).toMatchObject([
      { version: "1.1-broken", outcome: "RolledBack" },
      { version: "1.0", outcome: "Succeeded" },
    ]);
    expect(await get(["get", "deployment", "shop"], "{.spec.template.spec.containers[0].image}")).toBe(
      "registry.example.com/myapp:1.0",
    );
    const events = await k([
      "-n",
      NS,
      "get",
      "events",
      "--field-selector",
      "reason=RolledBack,involvedObject.kind=MyApp",
      "-o",
      "jsonpath={.items[0].type}: {.items[0].message}",
    ]);
    expect(events.stdout).toMatch(/^Warning: 1\.1-broken did not become available/);
    // The old version serves again: Ready comes back, still Degraded (the spec's version is not running).
    await until(async () => (await condition("Ready")) === "True", 60_000, "Ready=True on 1.0 again");
    expect(await get(["get", "deployment", "shop"], "{.status.readyReplicas}")).toBe("2");
  });

  it("clears the rollback when a later good version rolls out", async () => {
    expect((await patchVersion("1.2")).code).toBe(0);
    await until(
      async () => (await get(["get", "myapp", "shop"], "{.status.currentVersion}")) === "1.2",
      60_000,
      "1.2 to roll out",
    );
    expect(await condition("RolledBack")).toBe("False");
    expect(await condition("Degraded")).toBe("False");
    expect(await condition("Ready")).toBe("True");
    expect(
      await get(
        ["get", "myapp", "shop"],
        "{.status.previousVersion}|{.status.failedVersion}|{.status.phase}",
      ),
    ).toBe("1.0||Running");
    expect((await history()).map((h) => `${h.version} ${h.outcome}`)).toEqual([
      "1.2 Succeeded",
      "1.1-broken RolledBack",
      "1.0 Succeeded",
    ]);
  });

  it("refuses an invalid image tag and a negative replica count, naming the field, and changes nothing", async () => {
    const bad = (spec: object) =>
      k(["-n", NS, "patch", "myapp", "shop", "--type=merge", "-p", JSON.stringify({ spec })]);
    const tag = await bad({ version: "1.3 beta!" });
    expect(tag.code).not.toBe(0);
    expect(tag.stderr).toContain(
      'spec.version: Invalid value: "1.3 beta!": spec.version in body should match',
    );
    const replicas = await bad({ replicas: -1 });
    expect(replicas.code).not.toBe(0);
    expect(replicas.stderr).toContain(
      "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
    );
    expect(await get(["get", "myapp", "shop"], "{.spec.version} {.spec.replicas}")).toBe("1.2 2");
    expect(operator.output()).not.toMatch(/"reconcile failed/);
  });

  it("rolls a crash-looping version back the same way", async () => {
    expect((await patchVersion("1.3-crash")).code).toBe(0);
    await until(
      async () =>
        (
          await get(
            ["get", "pods", "-l", "app.kubernetes.io/instance=shop"],
            "{.items[*].status.containerStatuses[0].state.waiting.reason}",
          )
        ).includes("CrashLoopBackOff"),
      30_000,
      "a crash-looping pod",
    );
    await until(async () => (await condition("RolledBack")) === "True", 60_000, "RolledBack=True");
    expect(await get(["get", "myapp", "shop"], "{.status.currentVersion} {.status.failedVersion}")).toBe(
      "1.2 1.3-crash",
    );
    expect((await history())[0]).toMatchObject({ version: "1.3-crash", outcome: "RolledBack" });
    expect(await get(["get", "deployment", "shop"], "{.spec.template.spec.containers[0].image}")).toBe(
      "registry.example.com/myapp:1.2",
    );
  });
});

describe("MyApp with a PgDatabase database", () => {
  it("says the PgDatabase CRD is not installed in a condition, without failing reconciles or a Deployment", async () => {
    const app = {
      apiVersion: "apps.example.com/v1",
      kind: "MyApp",
      metadata: { name: "web", namespace: DB_NS },
      spec: { replicas: 1, version: "1.0", database: { enabled: true, serverSecret: "pg-admin" } },
    };
    const applied = await k(["apply", "-f", "-"], JSON.stringify(app));
    expect(applied.code, applied.stderr).toBe(0);
    await until(
      async () => (await dbCondition("DatabaseReady", "reason")) === "PgDatabaseNotInstalled",
      30_000,
      "DatabaseReady=False",
    );
    expect(await dbCondition("DatabaseReady")).toBe("False");
    expect(await dbCondition("DatabaseReady", "message")).toBe(
      "spec.database.enabled needs the PgDatabase operator, but its CRD (pgdatabases.db.example.com) is not installed: install it, or set spec.database.enabled to false",
    );
    expect(await dbCondition("Ready", "reason")).toBe("PgDatabaseNotInstalled");
    expect(await dbGet(["get", "myapp", "web"], "{.status.phase}")).toBe("Pending");
    expect((await k(["-n", DB_NS, "get", "deployment", "web"])).stderr).toContain("NotFound");
    expect(operator.process.exitCode).toBeNull();
    expect(operator.output()).not.toMatch(/reconcile failed/);
  });

  it("owns a PgDatabase, waits for it, wires its credentials Secret into the pods, and is Ready only when both are", async () => {
    await plane.installCrdObjects(readCrds([join(root, "../pgdatabase/config/crd")]));
    const pgdatabase = await startOperator("../pgdatabase/src/main.ts", {
      KUBECONFIG: plane.kubeconfigPath,
      BACKUP_DIR: backupDir,
      PG_BIN: postgres.binDir,
    });
    // A change to the MyApp looks again at once (a missing CRD is otherwise rechecked every minute).
    expect((await k(["-n", DB_NS, "annotate", "myapp", "web", "example.com/poke=1"])).code).toBe(0);
    const seen: string[] = [];
    await until(
      async () => {
        const [app, db] = await Promise.all([
          dbCondition("Ready"),
          dbGet(["get", "pgdatabase", "web-db"], '{.status.conditions[?(@.type=="Ready")].status}'),
        ]);
        seen.push(`${app}/${db}`);
        return app === "True";
      },
      150_000,
      "MyApp Ready=True",
    );
    // Never Ready before its database was.
    expect(seen.filter((s) => s.startsWith("True/") && s !== "True/True")).toEqual([]);
    expect(
      await dbGet(["get", "pgdatabase", "web-db"], '{.status.conditions[?(@.type=="Ready")].status}'),
    ).toBe("True");
    expect(
      await dbGet(
        ["get", "pgdatabase", "web-db"],
        "{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].controller}",
      ),
    ).toBe("MyApp true");
    expect(
      await dbGet(
        ["get", "deployment", "web"],
        "{.spec.template.spec.containers[0].env[0].name} {.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name} {.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.key}",
      ),
    ).toBe("DATABASE_URL web-db-credentials uri");
    expect(await dbGet(["get", "secret", "web-db-credentials"], "{.data.uri}")).not.toBe("");
    expect(await dbCondition("DatabaseReady")).toBe("True");
    expect(await dbGet(["get", "myapp", "web"], "{.status.phase}")).toBe("Running");
    expect(operator.output()).not.toMatch(/reconcile failed/);
    expect(pgdatabase.process.exitCode).toBeNull();
  }, 180_000); // two operators and PostgreSQL on a shared 2-core machine

  it("deleting the MyApp deletes its PgDatabase, and the PgDatabase operator's deletion policy drops the database", async () => {
    const databaseName = await dbGet(["get", "pgdatabase", "web-db"], "{.status.databaseName}");
    expect(await postgres.psql(`select count(*) from pg_database where datname = '${databaseName}'`)).toBe(
      "1",
    );
    expect((await k(["-n", DB_NS, "delete", "myapp", "web", "--wait=true"])).code).toBe(0);
    const gone = await k(["-n", DB_NS, "wait", "--for=delete", "pgdatabase/web-db", "--timeout=90s"]);
    expect(gone.code, gone.stderr).toBe(0);
    expect(await postgres.psql(`select count(*) from pg_database where datname = '${databaseName}'`)).toBe(
      "0",
    );
  });
});

describe("MyApp operator's generated config", () => {
  it("is up to date with its resource, controller and webhooks (kubeloop generate --check)", () => {
    const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");
    const check = spawnSync(process.execPath, [cli, "generate", "--check"], { cwd: root, encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.stdout).toContain("config is up to date");
    expect(check.status).toBe(0);
  });
});
