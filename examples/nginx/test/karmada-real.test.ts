import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KarmadaPlane } from "kubeloop/testing/servers";
import { afterAll, beforeAll, expect } from "vitest";
import { buildImage } from "./cluster.ts";
import { FLEET, type Fleet, fleet, generateConfig } from "./karmada.ts";
import { karmadaScenario } from "./karmada-scenario.ts";
import { root } from "./operator.ts";

// Seed 003's delivery through Karmada on real nodes: each member a `node`-profile plane, the
// operator's image (built by `kubeloop build`) loaded into its nodes, and the operator running in
// its own pods there: 5 in shanghai, 3 in singapore. Minutes long: `npm run test:karmada`.

const IMAGE = "ghcr.io/example/nginx-operator:0.1.0";
/**
 * The members' operators run without their webhooks: the webhook configurations cannot be templates
 * on Karmada (they would act on Karmada itself; docs/multi-cluster.md), so none is in the members,
 * and an OverridePolicy (Karmada's per-cluster env) turns the webhook server off there.
 */
const WEBHOOKS_OFF = `apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: { name: nginx-operator-webhooks-off, namespace: nginx-operator-system }
spec:
  resourceSelectors: [{ apiVersion: apps/v1, kind: Deployment, name: nginx-operator }]
  overrideRules:
    - targetCluster: { labelSelector: {} }
      overriders:
        plaintext:
          - path: /spec/template/spec/containers/0/env/-
            operator: add
            value: { name: ENABLE_WEBHOOKS, value: "false" }
`;
let plane: KarmadaPlane;
let f: Fleet;
let config: ReturnType<typeof generateConfig>;
let work: string;
let nginxImage: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "nginx-karmada-real-"));
  config = generateConfig();
  writeFileSync(join(config.dir, "karmada", "webhooks-off.yaml"), WEBHOOKS_OFF);
  const tarball = join(work, "operator.tar");
  const karmada = new KarmadaPlane({
    memberProfile: "node",
    members: FLEET.map(({ name, region }) => ({ name, region })),
  });
  // The image builds while the planes start: the two take about as long.
  await Promise.all([karmada.start(), buildImage(root, tarball, IMAGE)]);
  plane = karmada;
  f = fleet(plane);
  console.log(
    `figure: Karmada plane with ${FLEET.length} node-profile members started in ${plane.startSeconds}s`,
  );
  for (const member of plane.members) {
    expect(await member.plane.loadImage(tarball)).toContain(IMAGE);
    nginxImage = await member.plane.loadBaseImage("nginx");
  }
}, 600_000);
afterAll(async () => {
  await plane?.stop();
  config?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
});

karmadaScenario({
  plane: () => plane,
  fleet: () => f,
  config: () => config.dir,
  figure: (line) => console.log(`figure: ${line}`),
  nginxImage: () => nginxImage,
  installTimeoutMs: 240_000,
});
