// MyApp's database as a declared dependent, envtest-style: a real kube-apiserver (no
// controller-manager, no PgDatabase operator: the test writes the PgDatabase's status as that
// operator would) and the controller in a Manager in this process. Before the port, a MyApp whose
// database was switched off kept its PgDatabase (and the database) for ever.
import type { Client } from "kubeloop";
import { type apiextensions_v1, Deployment } from "kubeloop/k8s";
import { pollUntil, startTestEnvironment, type TestEnvironment } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgDatabase } from "../src/database.ts";
import { myAppController } from "../src/myapp.ts";
import { MyApp } from "../src/resources.ts";

const NS = "default";
/** PgDatabase's API as MyApp sees it: a served kind with a status (its operator is not running here). */
const PGDATABASE_CRD: apiextensions_v1.CustomResourceDefinition = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "pgdatabases.db.example.com" },
  spec: {
    group: "db.example.com",
    scope: "Namespaced",
    names: { plural: "pgdatabases", singular: "pgdatabase", kind: "PgDatabase" },
    versions: [
      {
        name: "v1alpha1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      },
    ],
  },
};

let env: TestEnvironment;
let client: Client;

beforeAll(async () => {
  env = await startTestEnvironment({ crds: [MyApp, PGDATABASE_CRD], controllers: [myAppController] });
  client = env.client;
});
afterAll(async () => {
  await env?.stop();
});

const exists = (name: string) =>
  client.get({ type: PgDatabase, namespace: NS, name }).then(
    () => true,
    () => false,
  );
const databaseUrl = async () =>
  (
    await client.get({ type: Deployment, namespace: NS, name: "web" })
  ).spec?.template.spec?.containers[0]?.env?.find((e) => e.name === "DATABASE_URL");

describe("MyApp's database, declared as a dependent", () => {
  it("switching the database off deletes the PgDatabase it made, and no one else's", async () => {
    // Someone else's PgDatabase, with the very labels MyApp puts on its own.
    await client.create({
      apiVersion: PgDatabase.apiVersion,
      kind: "PgDatabase",
      metadata: { name: "reports-db", namespace: NS, labels: { "app.kubernetes.io/part-of": "web" } },
      spec: { server: { secretName: "pg-admin" } },
    });
    await client.create({
      apiVersion: MyApp.apiVersion,
      kind: "MyApp",
      metadata: { name: "web", namespace: NS },
      spec: {
        replicas: 1,
        version: "1.0",
        image: "registry.example.com/myapp",
        database: { enabled: true, storage: "1Gi", serverSecret: "pg-admin" },
      },
    } as never);
    await pollUntil(() => exists("web-db"), { timeoutMs: 20_000, message: "the PgDatabase" });
    // The PgDatabase operator's part: Ready, credentials written.
    await client.patch(
      PgDatabase,
      "web-db",
      {
        status: {
          credentialsSecret: "web-db-credentials",
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "Ready",
              message: "",
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
      { namespace: NS, type: "merge", subresource: "status" },
    );
    await pollUntil(async () => (await databaseUrl().catch(() => undefined)) !== undefined, {
      timeoutMs: 20_000,
      message: "DATABASE_URL wired into the Deployment",
    });

    await client.patch(
      MyApp,
      "web",
      { spec: { database: { enabled: false } } },
      { namespace: NS, type: "merge" },
    );
    await pollUntil(async () => !(await exists("web-db")), {
      timeoutMs: 20_000,
      message: "the PgDatabase deleted",
    });
    await pollUntil(async () => (await databaseUrl()) === undefined, {
      timeoutMs: 20_000,
      message: "DATABASE_URL gone from the Deployment",
    });
    expect(await exists("reports-db")).toBe(true);
  });
});
