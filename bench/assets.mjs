// First run on an empty asset cache: how long until an API-server plane is up, and until a real
// node runs a pod, when the binaries come from a mirror of upstream's release files (downloaded and
// checked) versus built with Go. The mirror is served on loopback, filled by `kubeloop assets pack
// --mirror` from this machine's cache; each mirror run is a fresh process with a fresh cache. The
// Go side adds the build seconds recorded in the cache's build-info.json (a fresh build of the
// node stack takes half an hour on 2 cores) to a start on a warm cache, measured here.
// Needs root (real nodes). Run: npm run bench:assets

import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { componentsFor, defaultAssetsRoot, KUBERNETES_VERSION, readBuildInfo } from "kubeloop/testing/assets";

const cli = join(import.meta.dirname, "../packages/kubeloop/dist/cli/main.js");
// Under /var/tmp: the real nodes' control plane sees the host's /var/tmp, not its /tmp.
const tmp = mkdtempSync("/var/tmp/kubeloop-bench-assets-");
const shared = defaultAssetsRoot();

// One child per measurement: a fresh process, as a first `npm test` is.
const probe = (profile) => `
import { ControlPlane, kubectl } from "kubeloop/testing";
const t0 = performance.now();
const plane = await new ControlPlane({ profile: "${profile}" }).start();
const started = (performance.now() - t0) / 1000;
let running = started;
if ("${profile}" === "node") {
  const image = await plane.loadBaseImage("tools");
  const k = (args, input) => kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  await k(["apply", "-f", "-"], \`apiVersion: v1
kind: Pod
metadata: { name: sleeper, namespace: default }
spec: { containers: [{ name: main, image: \${image}, command: [sleep, "3600"] }] }
\`);
  const wait = await k(["wait", "--for=jsonpath={.status.phase}=Running", "pod/sleeper", "--timeout=120s"]);
  if (wait.code !== 0) throw new Error(wait.stderr);
  running = (performance.now() - t0) / 1000;
}
await plane.stop();
console.log(JSON.stringify({ started, running }));
`;

// Asynchronous: the mirror is served from this process, so a spawnSync would stall every download
// (and, with Go at hand, time a fallback to the Go build instead of the mirror).
async function measure(profile, env) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", probe(profile)], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...process.env, ...env },
    timeout: 1_800_000,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const [code] = await once(child, "close");
  if (code !== 0) throw new Error(`${profile} run failed:\n${stderr.slice(-3000)}`);
  // Every component must have come from the mirror, or the figure is not what its row says.
  if (env.KUBELOOP_ASSETS_MIRROR && /built .* with Go|Building /.test(stderr))
    throw new Error(`${profile} run built with Go instead of downloading:\n${stderr.slice(-3000)}`);
  return JSON.parse(stdout.trim().split("\n").pop());
}

const packed = spawnSync(
  process.execPath,
  [cli, "assets", "pack", "--mirror", "--out", join(tmp, "mirror")],
  {
    encoding: "utf8",
  },
);
if (packed.status !== 0) throw new Error(packed.stderr);
// The mirror: the packed tree as plain files, as any static web server would serve it.
const server = createServer((req, res) => {
  const file = join(tmp, "mirror", decodeURIComponent(new URL(req.url, "http://x").pathname));
  if (!existsSync(file) || statSync(file).isDirectory()) return res.writeHead(404).end();
  res.writeHead(200, { "content-length": statSync(file).size });
  createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const mirror = { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
const specs = componentsFor(KUBERNETES_VERSION);
const buildSeconds = (names) =>
  names.reduce((sum, name) => sum + (readBuildInfo(shared, specs[name])?.seconds ?? NaN), 0);
const apiserverParts = ["kubernetes", "etcd"];
const nodeParts = [
  ...apiserverParts,
  "kubernetes-node",
  "containerd",
  "runc",
  "cni-plugins",
  "coredns",
  "registry",
];
try {
  const fresh = (name) => ({ KUBELOOP_ASSETS: join(tmp, name), KUBELOOP_ASSETS_MIRROR: mirror.url });
  const apiserverMirror = await measure("apiserver", fresh("cache-apiserver"));
  const nodeMirror = await measure("node", fresh("cache-node"));
  const apiserverWarm = await measure("apiserver", { KUBELOOP_ASSETS: shared });
  const nodeWarm = await measure("node", { KUBELOOP_ASSETS: shared });
  const row = (what, mirrorSeconds, warm, parts) =>
    `| ${what} | ${mirrorSeconds.toFixed(1)} s | ${(buildSeconds(parts) + warm).toFixed(0)} s (${buildSeconds(parts).toFixed(0)} s of Go builds + ${warm.toFixed(1)} s warm) | ${warm.toFixed(1)} s |`;
  console.log(`# assets benchmark — ${new Date().toISOString()}`);
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; mirror on loopback (HTTP)\n`,
  );
  console.log("| empty cache → | through the mirror | through the Go build | cache already full |");
  console.log("|---|---|---|---|");
  console.log(
    row("API-server plane started", apiserverMirror.started, apiserverWarm.started, apiserverParts),
  );
  console.log(row("real node, a pod Running", nodeMirror.running, nodeWarm.running, nodeParts));
} finally {
  await mirror.close();
  rmSync(tmp, { recursive: true, force: true });
}
