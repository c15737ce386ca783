import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configMap, namespaces, rejection, startPlane, stopPlane } from "../../test/helpers.js";
import { ConfigMap, Namespace, Secret } from "../k8s/index.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { Client } from "./client.js";
import {
  AlreadyExists,
  Conflict,
  Forbidden,
  Gone,
  Invalid,
  ignoreNotFound,
  TooManyRequests,
  Unauthorized,
  UnknownKind,
} from "./errors.js";
import { refTo } from "./object-ref.js";
import { type KubeObject, resourceType } from "./types.js";

const fixtures = join(import.meta.dirname, "../../test/fixtures");

let plane: ControlPlane;
let client: Client;

/** A fresh namespace per test: tests share the plane, never their objects. */
const namespace = namespaces(() => client, "client-errors");

beforeAll(async () => {
  // Secrets bypass the watch cache, so compacting etcd makes old resourceVersions Gone for them.
  ({ plane, client } = await startPlane({
    crds: [join(fixtures, "crds/widgets.yaml")],
    apiServerArgs: ["--watch-cache-sizes=secrets#0"],
  }));
});
afterAll(() => stopPlane(plane, client));

describe("Typed errors, provoked for real", () => {
  it("reads what may be absent with ignoreNotFound, and still throws what is not NotFound", async () => {
    const ns = await namespace();
    expect(await client.get(refTo(ConfigMap, "absent", ns)).catch(ignoreNotFound)).toBeUndefined();
    await client.create(configMap(ns, "present", { color: "green" }));
    expect((await client.get(refTo(ConfigMap, "present", ns)).catch(ignoreNotFound))?.data).toEqual({
      color: "green",
    });
    // A request that fails for another reason must not read as absent.
    const aborted = client.get(refTo(ConfigMap, "absent", ns), { signal: AbortSignal.abort() });
    await expect(aborted.catch(ignoreNotFound)).rejects.toThrow();
    const unknown = client.get(refTo(resourceType("example.com/v1", "Missing"), "x", ns));
    await expect(unknown.catch(ignoreNotFound)).rejects.toBeInstanceOf(UnknownKind);
  });

  it("AlreadyExists on a second create", async () => {
    const ns = await namespace();
    await client.create(configMap(ns, "twice"));
    const error = await rejection(client.create(configMap(ns, "twice")));
    expect(error).toBeInstanceOf(AlreadyExists);
    expect(error.message).toBe('configmaps "twice" already exists');
  });

  it("Conflict on an update from a stale read", async () => {
    const ns = await namespace();
    const stale = await client.create(configMap(ns, "cas", { v: "1" }));
    await client.update({ ...stale, data: { v: "2" } });
    const error = await rejection(client.update({ ...stale, data: { v: "3" } }));
    expect(error).toBeInstanceOf(Conflict);
    expect(error.message).toContain("the object has been modified");
  });

  it("Invalid with the field causes of a schema violation", async () => {
    const ns = await namespace();
    const error = await rejection(
      client.create({
        ...({ apiVersion: "test.kubeloop.dev/v1", kind: "Widget" } as const),
        metadata: { name: "w", namespace: ns },
        spec: { size: 0 },
      }),
    );
    expect(error).toBeInstanceOf(Invalid);
    expect((error as Invalid).causes).toEqual([
      expect.objectContaining({
        field: "spec.size",
        message: expect.stringContaining("should be greater than or equal to 1"),
      }),
    ]);
  });

  it("Forbidden for a user RBAC does not allow", async () => {
    const user = plane.addUser("nobody");
    const limited = await Client.connect({ kubeconfig: user.kubeconfigPath });
    try {
      const error = await rejection(limited.list(Secret, { namespace: "default" }));
      expect(error).toBeInstanceOf(Forbidden);
      expect(error.message).toContain('User "nobody" cannot list resource "secrets"');
    } finally {
      await limited.close();
    }
  });

  it("Unauthorized for credentials the server does not accept", async () => {
    const text = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${plane.server}", certificate-authority-data: "${Buffer.from(plane.caCert).toString("base64")}" } }]
users: [{ name: u, user: { token: not-a-real-token } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;
    const stranger = await Client.connect({ kubeconfigText: text });
    try {
      const error = await rejection(stranger.discovery.refresh());
      expect(error).toBeInstanceOf(Unauthorized);
    } finally {
      await stranger.close();
    }
  });

  it("Gone for a watch from a resourceVersion older than etcd keeps", async () => {
    const ns = await namespace();
    const old = await client.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s1", namespace: ns },
    });
    // Two later writes: a watch from `old` needs the revision after it, which compaction removes.
    await client.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "s2", namespace: ns } });
    await client.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "s3", namespace: ns } });
    await plane.compactEtcd();
    const watch = client.watch(Secret, {
      namespace: ns,
      resourceVersion: old.metadata?.resourceVersion as string,
    });
    const error = await rejection(watch.next());
    expect(error).toBeInstanceOf(Gone);
    expect(error.message).toMatch(/too old|compacted/);
  });

  it("TooManyRequests from API Priority and Fairness, retried after Retry-After by default", async () => {
    // A priority level with one seat that rejects instead of queueing, for one user.
    await client.create({
      apiVersion: "flowcontrol.apiserver.k8s.io/v1",
      kind: "PriorityLevelConfiguration",
      metadata: { name: "tiny" },
      spec: {
        type: "Limited",
        limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: "Reject" } },
      },
    } as KubeObject);
    await client.create({
      apiVersion: "flowcontrol.apiserver.k8s.io/v1",
      kind: "FlowSchema",
      metadata: { name: "flooder" },
      spec: {
        priorityLevelConfiguration: { name: "tiny" },
        matchingPrecedence: 100,
        rules: [
          {
            subjects: [{ kind: "User", user: { name: "flooder" } }],
            resourceRules: [
              { verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true },
            ],
          },
        ],
      },
    } as KubeObject);
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "flooder-admin" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "User", name: "flooder", apiGroup: "rbac.authorization.k8s.io" }],
    } as KubeObject);
    const flooder = plane.addUser("flooder");
    const impatient = await Client.connect({ kubeconfig: flooder.kubeconfigPath, maxRetries: 0 });
    const patient = await Client.connect({ kubeconfig: flooder.kubeconfigPath });
    try {
      await impatient.resolve(ConfigMap);
      await patient.resolve(ConfigMap);
      let rejected: TooManyRequests | undefined;
      for (let round = 0; round < 20 && !rejected; round++) {
        const results = await Promise.allSettled(Array.from({ length: 40 }, () => impatient.list(Namespace)));
        rejected =
          results.find((r) => r.status === "rejected" && r.reason instanceof TooManyRequests)?.status ===
          "rejected"
            ? ((
                results.find(
                  (r) => r.status === "rejected" && r.reason instanceof TooManyRequests,
                ) as PromiseRejectedResult
              ).reason as TooManyRequests)
            : undefined;
      }
      expect(rejected).toBeInstanceOf(TooManyRequests);
      expect(rejected?.code).toBe(429);
      const results = await Promise.allSettled(Array.from({ length: 40 }, () => patient.list(Namespace)));
      expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    } finally {
      await impatient.close();
      await patient.close();
    }
  });

  it("UnknownKind for a kind the server does not serve, naming the likely cause", async () => {
    const Missing = resourceType("nothing.example.com/v1", "Nope");
    const error = await rejection(client.list(Missing));
    expect(error).toBeInstanceOf(UnknownKind);
    expect(error.message).toContain("is its CRD installed");
  });
});
