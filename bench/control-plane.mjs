// Start-up time and peak memory of each control-plane profile (median of N starts), and the
// binaries' build time. Run: npm run bench:control-plane [-- --runs 5] [-- --cold]
//   --cold  also builds every binary from nothing (empty Go module and build caches, fresh asset
//           folder) and times it; takes several minutes and a few GB of disk in the temp dir.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ControlPlane } from "kubeloop/testing";
import { COMPONENTS, defaultAssetsRoot, readBuildInfo } from "kubeloop/testing/assets";
import { median, procStats } from "./stats.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, cold: { type: "boolean" } },
});
const runs = Number(values.runs);

/** Peak resident memory (VmHWM) of a process, in MiB. */
function peakRssMiB(pid) {
  return (procStats(pid)?.peakRss ?? 0) / 2 ** 20;
}

async function measure(profile) {
  const starts = [];
  const peaks = [];
  const byComponent = {};
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const plane = await new ControlPlane({ profile, nodes: 1 }).start();
    starts.push((performance.now() - t0) / 1000);
    let total = 0;
    for (const c of plane.components) {
      const mib = peakRssMiB(c.pid);
      total += mib;
      byComponent[c.name] = [...(byComponent[c.name] ?? []), mib];
    }
    peaks.push(total);
    await plane.stop();
  }
  return { profile, startSeconds: median(starts), allStarts: starts, peakRssMiB: median(peaks), byComponent };
}

function coldBuild() {
  const scratch = mkdtempSync(join(tmpdir(), "kubeloop-cold-"));
  const env = {
    ...process.env,
    KUBELOOP_ASSETS: join(scratch, "assets"),
    GOMODCACHE: join(scratch, "gomod"),
    GOCACHE: join(scratch, "gocache"),
  };
  const cli = new URL("../packages/kubeloop/dist/cli/main.js", import.meta.url).pathname;
  const t0 = performance.now();
  const result = spawnSync(process.execPath, [cli, "assets", "build"], {
    env,
    stdio: ["ignore", "inherit", "inherit"],
  });
  const seconds = (performance.now() - t0) / 1000;
  const perComponent = Object.fromEntries(
    Object.values(COMPONENTS).map((spec) => [spec.name, readBuildInfo(env.KUBELOOP_ASSETS, spec)?.seconds]),
  );
  spawnSync("chmod", ["-R", "u+w", scratch]); // Go's module cache is read-only
  rmSync(scratch, { recursive: true, force: true });
  if (result.status !== 0) throw new Error("cold build failed");
  return { seconds, perComponent };
}

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
console.log(
  `# control-plane benchmark — ${new Date().toISOString()}\nmachine: ${machine}\nruns per profile: ${runs}\n`,
);
const cold = values.cold ? coldBuild() : undefined;
const results = [];
for (const profile of ["apiserver", "cluster"]) results.push(await measure(profile));

console.log("| profile | start-up, median (s) | all starts (s) | peak RSS, all processes, median (MiB) |");
console.log("|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.profile} | ${r.startSeconds.toFixed(2)} | ${r.allStarts.map((s) => s.toFixed(2)).join(", ")} | ${r.peakRssMiB.toFixed(0)} |`,
  );
}
console.log("\n| component (cluster profile) | peak RSS, median (MiB) |\n|---|---|");
for (const [name, xs] of Object.entries(results[1].byComponent))
  console.log(`| ${name} | ${median(xs).toFixed(0)} |`);
if (cold) {
  console.log(`\ncold build of all binaries (empty Go caches): ${cold.seconds.toFixed(0)} s`);
  console.log(`per component (s): ${JSON.stringify(cold.perComponent)}`);
} else {
  const root = defaultAssetsRoot();
  const recorded = Object.values(COMPONENTS).map(
    (spec) => `${spec.name} ${readBuildInfo(root, spec)?.seconds ?? "?"} s`,
  );
  console.log(
    `\nrecorded build times in ${root}: ${recorded.join(", ")} (pass --cold to time a build from nothing)`,
  );
}
