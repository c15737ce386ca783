import { KarmadaPlane, killOperators } from "kubeloop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NS } from "./cluster.ts";
import {
  applyToKarmada,
  FLEET,
  type Fleet,
  fleet,
  generateConfig,
  karmadaFiles,
  nginxState,
  operatorReady,
  REGION,
  regionalNginx,
  since,
} from "./karmada.ts";
import { type Operator, startOperator } from "./operator.ts";

// Seed 003's last step, with Karmada in KubeFed's place, in the suite's short form: two members on
// the `cluster` profile (kwok's pods, so the operator's Deployment becomes Ready without images),
// and the operator itself running as a process against each member, where its pods would run it.
// `npm run test:karmada` runs the same on real nodes (karmada-real.test.ts).

const REGISTRY = "registry.cn-east.example.com";
let plane: KarmadaPlane;
let f: Fleet;
let config: ReturnType<typeof generateConfig>;
const operators: Operator[] = [];
const [east, southeast] = FLEET;

beforeAll(async () => {
  config = generateConfig({ [east.region]: REGISTRY });
  plane = await new KarmadaPlane({
    memberProfile: "cluster",
    members: FLEET.map(({ name, region }) => ({ name, region })),
  }).start();
  f = fleet(plane);
  console.log(`figure: Karmada plane with ${FLEET.length} members started in ${plane.startSeconds}s`);
});
afterAll(async () => {
  await Promise.all(operators.map((operator) => operator.stop()));
  killOperators();
  await plane?.stop();
  config?.dispose();
});

describe("one operator, many regions, through Karmada", () => {
  it("joins each member labelled with its region", async () => {
    const clusters = await f.jsonpath(
      "karmada",
      ["get", "clusters.cluster.karmada.io"],
      `{range .items[*]}{.metadata.name}={.metadata.labels.topology\\.kubernetes\\.io/region}:{.status.conditions[?(@.type=="Ready")].status} {end}`,
    );
    expect(clusters.trim().split(" ").sort()).toEqual([
      "shanghai=cn-east:True",
      "singapore=ap-southeast:True",
    ]);
  });

  it("installs the operator in every member with its region's replicas and registry", async () => {
    const started = Date.now();
    await applyToKarmada(f, karmadaFiles(config.dir));
    for (const member of FLEET) {
      await f.until(
        async () => (await operatorReady(f, member.name)) === String(member.replicas),
        90_000,
        `the operator's ${member.replicas} replicas to be Ready in ${member.name}`,
      );
    }
    console.log(`figure: operator applied to Karmada → Ready in every member in ${since(started)}s`);
    const image = (member: string) =>
      f.jsonpath(
        member,
        ["-n", NS, "get", "deployment", "nginx-operator"],
        "{.spec.template.spec.containers[0].image}",
      );
    expect(await image(east.name)).toBe(`${REGISTRY}/example/nginx-operator:0.1.0`);
    expect(await image(southeast.name)).toBe("ghcr.io/example/nginx-operator:0.1.0");
    // The template on Karmada keeps what was applied; each member has its region's count.
    expect(
      await f.jsonpath("karmada", ["-n", NS, "get", "deployment", "nginx-operator"], "{.spec.replicas}"),
    ).toBe("2");
    for (const member of FLEET) {
      const crd = await f.k(member.name, ["get", "crd", "nginxes.proxy.example.com"]);
      expect(crd.code, crd.stderr).toBe(0);
      operators.push(
        await startOperator({
          KUBECONFIG: plane.member(member.name).plane.kubeconfigPath,
          ENABLE_WEBHOOKS: "false",
        }),
      );
    }
  });

  it("places a custom resource only in its region, reconciles it there, and shows its status on Karmada", async () => {
    expect((await f.k("karmada", ["create", "namespace", "web"])).code).toBe(0);
    for (const [member, name, replicas] of [
      [east, "web-east", 2],
      [southeast, "web-southeast", 1],
    ] as const) {
      const started = Date.now();
      const created = await f.k(
        "karmada",
        ["create", "-f", "-"],
        regionalNginx(name, member.region, replicas),
      );
      expect(created.code, created.stderr).toBe(0);
      await f.until(
        async () => (await nginxState(f, member.name, name)) === `True/${replicas}`,
        60_000,
        `${name} Ready in ${member.name}`,
      );
      const inMember = since(started);
      await f.until(
        async () => (await nginxState(f, "karmada", name)) === `True/${replicas}`,
        60_000,
        `${name}'s status on Karmada`,
      );
      console.log(
        `figure: ${name} created on Karmada → Ready in ${member.name} ${inMember}s → status back on Karmada ${since(started)}s`,
      );
      const other = FLEET.find((m) => m !== member)?.name as string;
      const elsewhere = await f.k(other, ["-n", "web", "get", "nginx", name]);
      expect(elsewhere.stderr).toContain("NotFound");
      expect(
        await f.jsonpath(member.name, ["-n", "web", "get", "deployment", name], "{.status.readyReplicas}"),
      ).toBe(String(replicas));
    }
  });

  it("loses nothing when a member's API server is down, and the member catches up", async () => {
    const member = plane.member(east.name).plane;
    const started = Date.now();
    await member.restartApiServer({
      whileStopped: async () => {
        const down = await f.k(east.name, ["get", "ns", "web"]);
        expect(down.code).not.toBe(0);
        const scaled = await f.k("karmada", [
          "-n",
          "web",
          "patch",
          "nginx",
          "web-east",
          "--type=merge",
          "-p",
          '{"spec":{"replicas":3}}',
        ]);
        expect(scaled.code, scaled.stderr).toBe(0);
      },
    });
    await f.until(
      async () => (await nginxState(f, east.name, "web-east")) === "True/3",
      90_000,
      "web-east at 3 in shanghai after the outage",
    );
    await f.until(
      async () => (await nginxState(f, "karmada", "web-east")) === "True/3",
      60_000,
      "web-east's status at 3 on Karmada",
    );
    console.log(`figure: member API server restarted, change made meanwhile caught up in ${since(started)}s`);
    expect(await operatorReady(f, east.name)).toBe(String(east.replicas));
    expect(await nginxState(f, southeast.name, "web-southeast")).toBe("True/1");
    expect(await f.k(southeast.name, ["-n", "web", "get", "nginx", "web-east"])).toMatchObject({ code: 1 });
    expect(
      await f.jsonpath(
        "karmada",
        ["-n", "web", "get", "nginx", "web-east"],
        `{.metadata.labels.${REGION.replaceAll(".", "\\.")}}`,
      ),
    ).toBe(east.region);
  });
});
