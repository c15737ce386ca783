import { defineConfig } from "vitest/config";
import suite from "../../../vitest.config.ts";

// `npm run test:karmada` only: seed 003's delivery through Karmada with real-node members takes
// minutes, so npm test's config leaves the file out (karmada.test.ts is the suite's short form).
export default defineConfig({
  test: {
    ...suite.test,
    include: ["examples/nginx/test/karmada-real.test.ts"],
    exclude: [],
    testTimeout: 600_000,
  },
});
