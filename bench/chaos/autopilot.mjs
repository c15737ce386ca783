// The autopilot run's long form: examples/nginx/test/autopilot.test.ts (the sharded nginx operator
// as pods, scaled by its generated HPA on its own work rate through prometheus-adapter) with more
// objects, more churn and a longer hold, its samples kept in bench/chaos/results-autopilot.json
// and drawn into docs/autopilot.svg (plot-autopilot.mjs); then autopilot-errors.test.ts, seed 003's
// error-rate rule end to end.
// Run (root): npm run chaos -- --real-pods --autopilot [--objects 100 --rate 6 --hold 30 --target 3]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));

/** Runs the test with the run's settings; returns its exit code. */
export function runAutopilot({ objects, rate, hold, target, out, plot, log }) {
  log(`autopilot: ${objects} Nginx, ${rate} changes/s, load held ${hold} s after the scale-up`);
  const test = spawnSync(
    process.execPath,
    [`${repo}/node_modules/vitest/vitest.mjs`, "run", "--config", "bench/chaos/vitest.autopilot.config.ts"],
    {
      cwd: repo,
      stdio: "inherit",
      env: {
        ...process.env,
        AUTOPILOT_OBJECTS: String(objects),
        AUTOPILOT_RATE: String(rate),
        AUTOPILOT_HOLD_S: String(hold),
        AUTOPILOT_TARGET: String(target),
        AUTOPILOT_SAMPLES: out,
      },
    },
  );
  const drawn = spawnSync(process.execPath, [`${repo}/bench/chaos/plot-autopilot.mjs`, out, plot], {
    cwd: repo,
    stdio: "inherit",
  });
  return test.status === 0 && drawn.status === 0 ? 0 : 1;
}
