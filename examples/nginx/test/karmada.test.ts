import { killOperators } from "kubeloop/testing";
import { KarmadaPlane } from "kubeloop/testing/servers";
import { afterAll, beforeAll } from "vitest";
import { FLEET, type Fleet, fleet, generateConfig } from "./karmada.ts";
import { karmadaScenario } from "./karmada-scenario.ts";
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

beforeAll(async () => {
  config = generateConfig({ [FLEET[0].region]: REGISTRY });
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

karmadaScenario({
  plane: () => plane,
  fleet: () => f,
  config: () => config.dir,
  figure: (line) => console.log(`figure: ${line}`),
  registry: REGISTRY,
  installTimeoutMs: 90_000,
  async afterInstall() {
    for (const member of plane.members)
      operators.push(
        await startOperator({ KUBECONFIG: member.plane.kubeconfigPath, ENABLE_WEBHOOKS: "false" }),
      );
  },
});
