// `npm run test:matrix`: the client, cache, controller and nginx end-to-end suites on each supported
// Kubernetes version that CI checks (the oldest and the newest; docs/compatibility.md says why).
// For each version it builds the control-plane binaries if the cache lacks them, runs vitest with
// KUBELOOP_K8S_VERSION set, and ends with one table: version × suite → passed/failed.
//   node scripts/test-matrix.mjs [version…]   e.g. `npm run test:matrix -- 1.34 1.35` for the middle ones
//   --json FILE                              also write the results as JSON
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const assets = await import(pathToFileURL(join(root, "packages/kubeloop/dist/testing/assets/index.js")).href);

/** Each suite is a folder of test files; every file starts its own control plane. */
const SUITES = {
  client: "packages/kubeloop/src/client",
  cache: "packages/kubeloop/src/cache",
  controller: "packages/kubeloop/src/controller",
  nginx: "examples/nginx/test",
};
const BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"];

const args = process.argv.slice(2);
const jsonAt = args.indexOf("--json");
const jsonFile = jsonAt >= 0 ? args.splice(jsonAt, 2)[1] : undefined;
let versions;
try {
  const asked = args.length ? args : [assets.OLDEST_KUBERNETES_VERSION, assets.KUBERNETES_VERSION];
  versions = [...new Set(asked.map((version) => assets.resolveKubernetesVersion(version)))];
} catch (error) {
  console.error(`[test:matrix] ${error.message}`);
  process.exit(2);
}

// Builds first, one after another (each uses every core), so no test waits on a compiler.
for (const kubernetesVersion of versions) {
  console.error(`[test:matrix] control-plane binaries for Kubernetes ${kubernetesVersion}…`);
  await assets.ensureAssets(BINARIES, { kubernetesVersion });
}

const scratch = mkdtempSync(join(tmpdir(), "kubeloop-matrix-"));
const results = [];
for (const kubernetesVersion of versions) {
  console.error(`\n[test:matrix] ===== Kubernetes ${kubernetesVersion} =====`);
  const report = join(scratch, `${kubernetesVersion}.json`);
  const started = Date.now();
  const run = spawnSync(
    join(root, "node_modules/.bin/vitest"),
    ["run", ...Object.values(SUITES), "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    {
      cwd: root,
      stdio: "inherit",
      // The workspace's bin first, as npm scripts have it: vitest's shebang must find the pinned Node.
      env: {
        ...process.env,
        PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
        KUBELOOP_K8S_VERSION: kubernetesVersion,
      },
    },
  );
  const seconds = Math.round((Date.now() - started) / 1000);
  results.push({ kubernetesVersion, seconds, exitCode: run.status, suites: countBySuite(report) });
}
rmSync(scratch, { recursive: true, force: true });

/**
 * passed/failed/skipped per suite, from vitest's JSON report. A test file that produced no results
 * (it failed to import, its setup threw, or the run crashed) counts as one failure, so a suite can
 * never look green by not running.
 */
function countBySuite(report) {
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(report, "utf8"));
  } catch {
    parsed = { testResults: [] };
  }
  const byFile = new Map((parsed.testResults ?? []).map((file) => [relative(root, file.name), file]));
  const suites = {};
  for (const [name, folder] of Object.entries(SUITES)) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const path of testFiles(folder)) {
      const tests = byFile.get(path)?.assertionResults ?? [];
      if (tests.length === 0) counts.failed++;
      for (const test of tests) {
        if (test.status === "passed") counts.passed++;
        else if (test.status === "failed") counts.failed++;
        else counts.skipped++;
      }
    }
    suites[name] = counts;
  }
  return suites;
}

function testFiles(folder) {
  return readdirSync(join(root, folder), { recursive: true })
    .filter((name) => String(name).endsWith(".test.ts"))
    .map((name) => join(folder, String(name)));
}

function cell({ passed, failed, skipped }) {
  const parts = [`${passed} passed`];
  if (failed) parts.push(`**${failed} failed**`);
  if (skipped) parts.push(`${skipped} skipped`);
  return parts.join(", ");
}

const header = ["Kubernetes", ...Object.keys(SUITES), "time"];
const rows = results.map((r) => [
  `v${r.kubernetesVersion}`,
  ...Object.keys(SUITES).map((name) => cell(r.suites[name])),
  `${Math.floor(r.seconds / 60)}m${String(r.seconds % 60).padStart(2, "0")}s`,
]);
console.log("\nTest matrix (Markdown, for docs/compatibility.md):\n");
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => "---").join("|")}|`);
for (const row of rows) console.log(`| ${row.join(" | ")} |`);
if (jsonFile) {
  mkdirSync(dirname(resolve(jsonFile)), { recursive: true });
  writeFileSync(resolve(jsonFile), `${JSON.stringify(results, null, 2)}\n`);
}

const failed = results.filter(
  (r) => r.exitCode !== 0 || Object.values(r.suites).some((counts) => counts.failed !== 0),
);
if (failed.length) {
  console.log(`\nFailed on ${failed.map((r) => `v${r.kubernetesVersion}`).join(", ")}.`);
  process.exit(1);
}
console.log(`\nAll suites passed on ${results.map((r) => `v${r.kubernetesVersion}`).join(" and ")}.`);
