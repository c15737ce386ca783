import type { KarmadaPlane } from "kubeloop/testing/servers";
import { describe, expect, it } from "vitest";
import { NS } from "./cluster.ts";
import {
  applyToKarmada,
  FLEET,
  type Fleet,
  KARMADA_DISCOVERY_MS,
  karmadaFiles,
  nginxState,
  operatorReady,
  REGION,
  regionalNginx,
  since,
  untilBound,
} from "./karmada.ts";

// The steps of seed 003's delivery through Karmada, as both forms run them (karmada.test.ts on
// kwok's pods with the operator as a process per member, karmada-real.test.ts on real nodes with
// the operator in its pods). Each step is checked with kubectl against Karmada and each member.

export interface ScenarioSetup {
  plane(): KarmadaPlane;
  fleet(): Fleet;
  /** The generated config folder (`kubeloop generate --karmada`). */
  config(): string;
  /** `shanghai`'s registry override, when the generated policies have one. */
  registry?: string;
  /** The image the Nginx objects run (real nodes cannot pull the default). */
  nginxImage?(): string;
  /** Runs once the operator's Deployment is Ready in every member (the kwok form starts its processes). */
  afterInstall?(): Promise<void>;
  /** Prints a figure line (the test files own the console). */
  figure(line: string): void;
  /** How long the operator's pods may take to be Ready (real pods start a Node.js process each). */
  installTimeoutMs: number;
}

const [east, southeast] = FLEET;

export function karmadaScenario(setup: ScenarioSetup): void {
  const f = () => setup.fleet();
  describe("one operator, many regions, through Karmada", () => {
    it("joins each member labelled with its region", async () => {
      const clusters = await f().jsonpath(
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
      await applyToKarmada(f(), karmadaFiles(setup.config()));
      for (const member of FLEET) {
        await f().until(
          async () => (await operatorReady(f(), member.name)) === String(member.replicas),
          setup.installTimeoutMs,
          `the operator's ${member.replicas} replicas to be Ready in ${member.name}`,
        );
      }
      setup.figure(`operator applied to Karmada → Ready in every member in ${since(started)}s`);
      const image = (member: string) =>
        f().jsonpath(
          member,
          ["-n", NS, "get", "deployment", "nginx-operator"],
          "{.spec.template.spec.containers[0].image}",
        );
      const upstream = "ghcr.io/example/nginx-operator:0.1.0";
      expect(await image(east.name)).toBe(
        setup.registry ? `${setup.registry}/example/nginx-operator:0.1.0` : upstream,
      );
      expect(await image(southeast.name)).toBe(upstream);
      // The template on Karmada keeps what was applied; each member has its region's count.
      expect(
        await f().jsonpath("karmada", ["-n", NS, "get", "deployment", "nginx-operator"], "{.spec.replicas}"),
      ).toBe("2");
      for (const member of FLEET) {
        const crd = await f().k(member.name, ["get", "crd", "nginxes.proxy.example.com"]);
        expect(crd.code, crd.stderr).toBe(0);
      }
      await setup.afterInstall?.();
    });

    it(
      "places a custom resource only in its region, reconciles it there, and shows its status on Karmada",
      async () => {
        expect((await f().k("karmada", ["create", "namespace", "web"])).code).toBe(0);
        const placed = [
          [east, "web-east", 2],
          [southeast, "web-southeast", 1],
        ] as const;
        // Both at once: each waits for Karmada's next discovery of the new kind, not one after the other.
        const started = Date.now();
        for (const [member, name, replicas] of placed) {
          const nginx = regionalNginx(name, member.region, replicas, setup.nginxImage?.());
          const created = await f().k("karmada", ["create", "-f", "-"], nginx);
          expect(created.code, created.stderr).toBe(0);
        }
        for (const [member, name, replicas] of placed) {
          await untilBound(f(), setup.plane(), name);
          const bound = since(started);
          await f().until(
            async () => (await nginxState(f(), member.name, name)) === `True/${replicas}`,
            setup.installTimeoutMs,
            `${name} Ready in ${member.name}`,
          );
          const inMember = since(started);
          await f().until(
            async () => (await nginxState(f(), "karmada", name)) === `True/${replicas}`,
            60_000,
            `${name}'s status on Karmada`,
          );
          setup.figure(
            `${name} created on Karmada → bound ${bound}s → Ready in ${member.name} ${inMember}s → status back on Karmada ${since(started)}s`,
          );
          const other = FLEET.find((m) => m !== member)?.name as string;
          const elsewhere = await f().k(other, ["-n", "web", "get", "nginx", name]);
          expect(elsewhere.stderr).toContain("NotFound");
          expect(
            await f().jsonpath(
              member.name,
              ["-n", "web", "get", "deployment", name],
              "{.status.readyReplicas}",
            ),
          ).toBe(String(replicas));
        }
      },
      KARMADA_DISCOVERY_MS + 2 * setup.installTimeoutMs + 60_000,
    );

    it("loses nothing when a member's API server is down, and the member catches up", async () => {
      const member = setup.plane().member(east.name).plane;
      const started = Date.now();
      await member.restartApiServer({
        whileStopped: async () => {
          const down = await f().k(east.name, ["get", "ns", "web"]);
          expect(down.code).not.toBe(0);
          const scaled = await f().k("karmada", [
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
      await f().until(
        async () => (await nginxState(f(), east.name, "web-east")) === "True/3",
        setup.installTimeoutMs,
        "web-east at 3 in shanghai after the outage",
      );
      await f().until(
        async () => (await nginxState(f(), "karmada", "web-east")) === "True/3",
        60_000,
        "web-east's status at 3 on Karmada",
      );
      setup.figure(`member API server restarted, change made meanwhile caught up in ${since(started)}s`);
      // Nothing lost: the operator's Deployment is all Ready again (on real nodes a replica whose
      // API server vanished may restart: its liveness probe or its lost Lease).
      await f().until(
        async () => (await operatorReady(f(), east.name)) === String(east.replicas),
        setup.installTimeoutMs,
        `the operator's ${east.replicas} replicas Ready again in shanghai`,
      );
      expect(await nginxState(f(), southeast.name, "web-southeast")).toBe("True/1");
      expect(await f().k(southeast.name, ["-n", "web", "get", "nginx", "web-east"])).toMatchObject({
        code: 1,
      });
      const label = `{.metadata.labels.${REGION.replaceAll(".", "\\.")}}`;
      expect(await f().jsonpath("karmada", ["-n", "web", "get", "nginx", "web-east"], label)).toBe(
        east.region,
      );
    });
  });
}
