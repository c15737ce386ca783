/**
 * The end-to-end suite `kubeloop init` writes (`npm run test:e2e`), kept out of `npm test`: it builds
 * the image, runs it as pods on a real node and needs root, as kubebuilder's e2e suite needs kind.
 */

export const E2E_CONFIG_PATH = "vitest.e2e.config.ts";
export const E2E_TEST_PATH = "test/e2e/operator.e2e.test.ts";

export const E2E_CONFIG = `import { defineConfig } from "vitest/config";

// npm run test:e2e: the operator's image on a real node (needs root). npm test leaves test/e2e out.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    // Building the image and starting a node take a minute warm, several the first time.
    hookTimeout: 600_000,
    testTimeout: 180_000,
  },
});
`;

export const E2E_TEST = `import { existsSync } from "node:fs";
import { join } from "node:path";
import { OperatorE2e } from "kubeloop/testing/cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The operator as it ships: its image built by \`kubeloop build\`, loaded into a real node
// (containerd, runc, kubelet), installed by \`kubeloop deploy\` from config/, running as a pod.

const root = join(import.meta.dirname, "../..");
const samples = join(root, "config/samples");
let e2e: OperatorE2e;

beforeAll(async () => {
  e2e = await OperatorE2e.start({ project: root });
});
afterAll(async () => {
  await e2e?.stop();
});

describe("the operator on a real node", () => {
  it("runs as a Ready pod from its image", async () => {
    const replicas = await e2e.kubectl([
      ...["-n", e2e.namespace, "get", "deployment", e2e.name],
      ...["-o", "jsonpath={.spec.replicas} {.status.readyReplicas}"],
    ]);
    const [wanted, ready] = replicas.stdout.split(" ");
    expect(Number(wanted)).toBeGreaterThan(0);
    expect(ready, await e2e.describePods()).toBe(wanted);
  });

  it.runIf(existsSync(samples))("reconciles every sample in config/samples to Ready=True", async () => {
    const applied = await e2e.kubectl(["apply", "-f", samples, "-o", "name"]);
    expect(applied.code, applied.stderr).toBe(0);
    for (const resource of applied.stdout.trim().split("\\n")) await e2e.waitForCondition(resource, "Ready");
  });

  it("serves /metrics over HTTPS to a reader with a ServiceAccount token", async () => {
    expect(await e2e.scrapeMetrics()).toContain("# TYPE controller_runtime_reconcile_total counter");
  });
});
`;
