import { defineConfig } from "vitest/config";
import suite from "../../vitest.config.ts";

// `npm run chaos -- --real-pods --autopilot` only: the autopilot run takes minutes, so npm test's
// config leaves its file out (rather than counting it as skipped).
export default defineConfig({
  test: { ...suite.test, include: ["examples/nginx/test/autopilot.test.ts"], exclude: [] },
});
