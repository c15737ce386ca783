import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "examples/*/test/**/*.test.ts",
      "bench/**/*.test.ts",
      "docs/test/**/*.test.ts",
      "scripts/**/*.test.ts",
    ],
    // Minutes long: `npm run chaos -- --real-pods --autopilot` runs them (bench/chaos/vitest.autopilot.config.ts);
    // autopilot-short.test.ts is the suite's form.
    exclude: [
      ...configDefaults.exclude,
      "examples/nginx/test/autopilot.test.ts",
      "examples/nginx/test/autopilot-errors.test.ts",
      // Karmada with real-node members, minutes long: `npm run test:karmada` (karmada.test.ts is the suite's form).
      "examples/nginx/test/karmada-real.test.ts",
    ],
    // Each file starts its own control plane: processes, not threads, keep them apart.
    pool: "forks",
    // Files mostly wait on API servers, so three run well side by side on two cores.
    maxWorkers: 3,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    globalSetup: ["packages/kubeloop/test/global-setup.ts"],
    reporters: ["default", "./scripts/summary-reporter.ts"],
  },
});
