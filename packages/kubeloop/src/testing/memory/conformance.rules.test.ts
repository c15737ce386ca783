import { describe, expect, it } from "vitest";
import {
  conformance,
  KINDS,
  refused,
  servers,
  step,
  useServers,
  Widget,
  widget,
} from "../../../test/memory-conformance.js";
import type { ApiError } from "../../client/errors.js";
import { type KubeObject, resourceType } from "../../client/types.js";
import { BUILTIN_DISCOVERY } from "./builtin-discovery.js";
import { readDiscovery } from "./capture-discovery.js";
import type { DiscoveryDocument } from "./kinds.js";

// Differential conformance (see conformance.test.ts) of what the server enforces: schemas and
// validation, namespaces, the features the memory server refuses, discovery, RBAC.

useServers();

describe("Widget schema: defaulting, pruning, validation", () => {
  const cases: [string, unknown][] = [
    ["size too large", { size: 11 }],
    ["size negative", { size: -1 }],
    ["size a string", { size: "three" }],
    ["size a float", { size: 1.5 }],
    ["color not in the enum", { color: "green" }],
    ["name too short", { name: "a" }],
    ["name too long", { name: "abcdefghij" }],
    ["name not matching the pattern", { name: "ABC" }],
    ["too many tags", { tags: ["a", "b", "c", "d"] }],
    ["a tag of the wrong type", { tags: [1] }],
    ["several errors at once", { size: 99, color: "green" }],
    ["unknown fields are pruned", { size: 2, unknown: "dropped", nested: { x: 1 } }],
    ["defaults fill in size", { color: "blue" }],
    ["an empty spec gets its defaults", {}],
    ["valid values", { size: 10, color: "red", name: "abc", tags: ["x"] }],
    ["spec null", null],
  ];
  for (const [label, spec] of cases)
    conformance(label, async (c, ns, t) => {
      await step(t, () => c.create(widget(ns, { spec })));
    });
  conformance("no spec at all gets the default spec", async (c, ns, t) => {
    await step(t, () => c.create(widget(ns)));
  });
  conformance("unknown top-level fields are pruned", async (c, ns, t) => {
    await step(t, () => c.create(widget(ns, { extra: 1, spec: {} })));
  });
  conformance("a schema whose root preserves unknown fields keeps every field", async (c, ns, t) => {
    const bag = {
      apiVersion: "conformance.kubeloop.dev/v1",
      kind: "Bag",
      metadata: { name: "b", namespace: ns },
    };
    await step(t, () =>
      c.create({ ...bag, spec: { a: 1, nested: { b: [1, 2] } }, extra: "kept" } as KubeObject),
    );
  });
  conformance("invalid update: 422", async (c, ns, t) => {
    const created = (await step(t, () => c.create(widget(ns, { spec: {} })))) as KubeObject;
    await step(t, () => c.update({ ...created, spec: { size: 50 } } as KubeObject));
  });
});

describe("Deployment validation", () => {
  conformance("selector not matching the template labels: 422", async (c, ns, t) => {
    const d = KINDS[2]?.make(ns, "d") as KubeObject & { spec: { selector: unknown } };
    d.spec.selector = { matchLabels: { app: "other" } };
    await step(t, () => c.create(d));
  });
  conformance("negative replicas: 422", async (c, ns, t) => {
    const d = KINDS[2]?.make(ns, "d") as KubeObject & { spec: { replicas: number } };
    d.spec.replicas = -1;
    await step(t, () => c.create(d));
  });
  conformance("image pull policy defaults by tag", async (c, ns, t) => {
    for (const [name, image] of [
      ["latest", "nginx:latest"],
      ["none", "nginx"],
      ["tagged", "nginx:1.27"],
    ] as const) {
      const d = KINDS[2]?.make(ns, name) as KubeObject & {
        spec: { template: { spec: { containers: { image: string }[] } } };
      };
      (d.spec.template.spec.containers[0] as { image: string }).image = image;
      await step(t, () => c.create(d));
    }
  });
  conformance("a status patch's undefined fields are left out, as JSON leaves them", async (c, ns, t) => {
    await step(t, () => c.create(widget(ns, { spec: { size: 1 } })));
    await step(t, () =>
      c.patch(
        Widget,
        "w",
        { status: { ready: undefined, count: 2 } },
        { namespace: ns, subresource: "status" },
      ),
    );
  });
  conformance("strategic merge patch merges containers by name", async (c, ns, t) => {
    await step(t, () => c.create(KINDS[2]?.make(ns, "d") as KubeObject));
    await step(t, () =>
      c.patch(
        resourceType("apps/v1", "Deployment"),
        "d",
        {
          spec: {
            template: {
              spec: {
                containers: [
                  { name: "web", image: "nginx:1.28" },
                  { name: "side", image: "busybox:1" },
                ],
              },
            },
          },
        },
        { namespace: ns, type: "strategic" },
      ),
    );
  });
  conformance(
    "apply merges as the kind's schema says: spread constraints by topologyKey and whenUnsatisfiable, nodeSelector whole",
    async (c, ns, t) => {
      type PodTemplated = KubeObject & { spec: { template: { spec: Record<string, unknown> } } };
      const spread = (whenUnsatisfiable: string) => ({
        maxSkew: 1,
        topologyKey: "zone",
        whenUnsatisfiable,
        labelSelector: { matchLabels: { app: "web" } },
      });
      const d = KINDS[2]?.make(ns, "d") as PodTemplated;
      d.spec.template.spec.topologySpreadConstraints = [spread("DoNotSchedule")];
      d.spec.template.spec.nodeSelector = { disk: "ssd" };
      await step(t, () => c.apply(d, { fieldManager: "one" }));
      const second = {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "d", namespace: ns },
        spec: {
          template: {
            spec: { topologySpreadConstraints: [spread("ScheduleAnyway")], nodeSelector: { gpu: "yes" } },
          },
        },
      };
      await step(t, () => c.apply(second, { fieldManager: "two" })); // nodeSelector is one's, whole: 409
      const forced = (await step(t, () =>
        c.apply(second, { fieldManager: "two", force: true }),
      )) as PodTemplated;
      t.push(forced?.spec.template.spec.topologySpreadConstraints, forced?.spec.template.spec.nodeSelector);
    },
  );
});

describe("Namespaces", () => {
  conformance("a namespace gets its name label, finalizer and phase", async (c, ns, t) => {
    await step(t, () => c.get(resourceType("v1", "Namespace"), ns));
  });
  conformance("deleting a namespace leaves it Terminating; creating in it is forbidden", async (c, ns, t) => {
    await step(t, () => c.delete(resourceType("v1", "Namespace"), ns));
    await step(t, () =>
      c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "late", namespace: ns } }),
    );
  });
});

describe("Refused features", () => {
  refused("dry-run", /dry-run/, async (c, ns) => {
    await c.create(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: ns } },
      { dryRun: true },
    );
  });
  refused("scale subresource", /scale subresource/, async (c, ns) => {
    await c.create(KINDS[2]?.make(ns, "d") as KubeObject);
    await c.getScale(resourceType("apps/v1", "Deployment"), "d", { namespace: ns });
  });
  refused("writes of pods", /writes of pods/, async (c, ns) => {
    await c.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: ns },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
  });
  conformance("pods can be read (an empty list)", async (c, ns, t) => {
    await step(t, async () => (await c.list(resourceType("v1", "Pod"), { namespace: ns })).items);
  });
  // Built-in kinds that are listed in discovery (as the real server lists them) but not emulated.
  refused("a Service create", /built-in kind Service \(v1, resource services\)/, async (c, ns) => {
    await c.create({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s", namespace: ns },
      spec: { ports: [{ port: 80 }], selector: { app: "web" } },
    } as KubeObject);
  });
  refused(
    "a StatefulSet list",
    /built-in kind StatefulSet \(apps\/v1, resource statefulsets\)/,
    async (c, ns) => {
      await c.list(resourceType("apps/v1", "StatefulSet"), { namespace: ns });
    },
  );
  refused("a Job get", /built-in kind Job \(batch\/v1, resource jobs\)/, async (c, ns) => {
    await c.get(resourceType("batch/v1", "Job"), "missing", { namespace: ns }).catch((error) => {
      if ((error as ApiError).code !== 404) throw error;
    });
  });
});

describe("Discovery of built-in kinds", () => {
  const builtinOnly = (document: DiscoveryDocument): DiscoveryDocument => ({
    ...document,
    items: document.items.filter((item) => item.metadata.name !== Widget.group),
  });

  it("the captured discovery (builtin-discovery.json) is what the live kube-apiserver serves", async () => {
    const live = (await readDiscovery(servers().real)) as {
      core: DiscoveryDocument;
      groups: DiscoveryDocument;
    };
    // On a mismatch, regenerate it: see capture-discovery.ts.
    expect({ core: live.core, groups: builtinOnly(live.groups) }).toEqual(BUILTIN_DISCOVERY);
  });

  it("the memory server serves the same discovery for every built-in group", async () => {
    const live = (await readDiscovery(servers().real)) as {
      core: DiscoveryDocument;
      groups: DiscoveryDocument;
    };
    const served = (await readDiscovery(servers().memory)) as {
      core: DiscoveryDocument;
      groups: DiscoveryDocument;
    };
    expect(served.core).toEqual(live.core);
    expect(builtinOnly(served.groups)).toEqual(builtinOnly(live.groups));
  });

  for (const [apiVersion, kind] of [
    ["apps/v1", "StatefulSet"],
    ["apps/v1", "Deployment"],
    ["v1", "Service"],
    ["batch/v1", "CronJob"],
    ["policy/v1", "PodDisruptionBudget"],
    ["autoscaling/v2", "HorizontalPodAutoscaler"],
  ] as const)
    conformance(`${kind} in ${apiVersion} resolves as on the real server`, async (c, _ns, t) => {
      await step(t, () => c.resolve(resourceType(apiVersion, kind)));
    });
});

// ---------------------------------------------------------------- RBAC: requests as a user

const ConfigMapType = resourceType("v1", "ConfigMap");
const SecretType = resourceType("v1", "Secret");
const NamespaceType = resourceType("v1", "Namespace");
const DeploymentType = resourceType("apps/v1", "Deployment");
const rbac = "rbac.authorization.k8s.io/v1";
const role = (ns: string, name: string, rules: object[]) => ({
  apiVersion: rbac,
  kind: "Role",
  metadata: { name, namespace: ns },
  rules,
});
const binding = (ns: string, name: string, roleRef: { kind: string; name: string }, subjects: object[]) => ({
  apiVersion: rbac,
  kind: "RoleBinding",
  metadata: { name, namespace: ns },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef },
  subjects,
});
const alice = [{ kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" }];

describe("RBAC: requests as a user, through Roles", () => {
  conformance(
    "a user without a role: 403 on every verb, namespaced and cluster-wide",
    async (c, ns, t, as) => {
      await c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: ns } });
      const u = await as("nobody");
      await step(t, () => u.list(ConfigMapType, { namespace: ns }));
      await step(t, () => u.get({ type: ConfigMapType, namespace: ns, name: "a" }));
      await step(t, () =>
        u.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b", namespace: ns } }),
      );
      await step(t, () => u.delete(ConfigMapType, "a", { namespace: ns }));
      await step(t, () => u.patch(ConfigMapType, "a", { data: { x: "y" } }, { namespace: ns }));
      await step(t, () => u.list(NamespaceType));
      await step(t, () => u.get({ type: NamespaceType, name: ns }));
    },
  );

  conformance(
    "a Role that allows get and list of configmaps: those pass, the rest is 403",
    async (c, ns, t, as) => {
      await c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: ns } });
      await c.create(
        role(ns, "reader", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }]),
      );
      await c.create(binding(ns, "alice-reads", { kind: "Role", name: "reader" }, alice));
      const u = await as("alice");
      await step(t, async () =>
        (await u.list(ConfigMapType, { namespace: ns })).items.map((i) => i.metadata?.name),
      );
      await step(
        t,
        async () => (await u.get({ type: ConfigMapType, namespace: ns, name: "a" })).metadata?.name,
      );
      await step(t, () =>
        u.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "b", namespace: ns } }),
      );
      await step(t, () => u.list(SecretType, { namespace: ns }));
      await step(t, () => u.list(ConfigMapType, { namespace: "default" }));
    },
  );

  conformance("resourceNames restrict a rule to named objects", async (c, ns, t, as) => {
    for (const name of ["a", "b"])
      await c.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns } });
    await c.create(
      role(ns, "only-a", [
        { apiGroups: [""], resources: ["configmaps"], resourceNames: ["a"], verbs: ["get"] },
      ]),
    );
    await c.create(binding(ns, "alice-a", { kind: "Role", name: "only-a" }, alice));
    const u = await as("alice");
    await step(
      t,
      async () => (await u.get({ type: ConfigMapType, namespace: ns, name: "a" })).metadata?.name,
    );
    await step(t, () => u.get({ type: ConfigMapType, namespace: ns, name: "b" }));
    await step(t, () => u.list(ConfigMapType, { namespace: ns }));
  });
});

describe("RBAC: requests as a user, through ClusterRoles, subresources and service accounts", () => {
  conformance("a ClusterRole bound in one namespace, through a Group", async (c, ns, t, as) => {
    await c.create({
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: `${ns}-deployments` },
      rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["list", "get"] }],
    });
    await c.create(
      binding(ns, "team", { kind: "ClusterRole", name: `${ns}-deployments` }, [
        { kind: "Group", name: "team", apiGroup: "rbac.authorization.k8s.io" },
      ]),
    );
    const u = await as("bob", ["team"]);
    await step(t, async () => (await u.list(DeploymentType, { namespace: ns })).items);
    await step(t, () => u.list(DeploymentType, { namespace: "default" }));
    await step(t, () => u.list(DeploymentType));
    const stranger = await as("carol", ["other"]);
    await step(t, () => stranger.list(DeploymentType, { namespace: ns }));
  });

  conformance("the status subresource is a resource of its own", async (c, ns, t, as) => {
    await c.create(KINDS[2]?.make(ns, "d") as KubeObject);
    await c.create(
      role(ns, "deployer", [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "patch"] }]),
    );
    await c.create(binding(ns, "alice-deploys", { kind: "Role", name: "deployer" }, alice));
    const u = await as("alice");
    await step(
      t,
      async () =>
        (await u.patch(DeploymentType, "d", { metadata: { labels: { x: "y" } } }, { namespace: ns })).metadata
          ?.labels,
    );
    await step(t, () =>
      u.patch(DeploymentType, "d", { status: { replicas: 1 } }, { namespace: ns, subresource: "status" }),
    );
  });

  conformance("a ClusterRoleBinding for a service account, cluster-wide", async (c, ns, t, as) => {
    await c.create({
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: `${ns}-ns-reader` },
      rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }],
    });
    await c.create({
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name: `${ns}-bot` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${ns}-ns-reader` },
      subjects: [{ kind: "ServiceAccount", name: "bot", namespace: ns }],
    });
    const u = await as(`system:serviceaccount:${ns}:bot`);
    await step(t, async () => (await u.get({ type: NamespaceType, name: ns })).metadata?.name);
    await step(t, () => u.list(NamespaceType));
  });
});
