import { defineConfig } from "vitest/config";
import suite from "../../vitest.config.ts";

// `npm run chaos -- --real-pods --autopilot` only: the autopilot runs take minutes, so npm test's
// config leaves their files out (rather than counting them as skipped). One after the other: each
// starts a real-node plane.
export default defineConfig({
  test: {
    ...suite.test,
    include: ["examples/nginx/test/autopilot.test.ts", "examples/nginx/test/autopilot-errors.test.ts"],
    exclude: [],
    fileParallelism: false,
  },
});
