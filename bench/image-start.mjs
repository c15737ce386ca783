// Container start → ready for an operator image built by `kubeloop build`: the nginx example's
// image imported into a containerd of its own and run under runc (host network, as nonroot), against
// a real API server holding 0 and then N Nginx objects; the time from `ctr run` to the first 200 of
// /readyz (the manager's caches synced). Needs root, and containerd, ctr and runc in the asset cache
// (~/.cache/kubeloop/containerd-*/, runc-*/).
//
//   npm run build && node bench/image-start.mjs [--objects 10000] [--runs 3]
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "kubeloop";
import { ControlPlane, freePort, pollUntil, readManifests } from "kubeloop/testing";

const { values } = parseArgs({
  options: { objects: { type: "string", default: "10000" }, runs: { type: "string", default: "3" } },
});
const root = join(import.meta.dirname, "..");
const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "kubeloop");
const find = (component, name) =>
  readdirSync(cache)
    .filter((d) => d.startsWith(`${component}-v`))
    .map((d) => join(cache, d, name))
    .find((p) => existsSync(p));
const [containerd, ctr, runc] = [
  find("containerd", "containerd"),
  find("containerd", "ctr"),
  find("runc", "runc"),
];
if (!containerd || !ctr || !runc) throw new Error(`containerd, ctr and runc are needed in ${cache}`);

const work = mkdtempSync(join(tmpdir(), "kubeloop-image-start-"));
const image = "kubeloop.bench/nginx-operator:bench";
const build = spawnSync(
  process.execPath,
  [
    join(root, "packages/kubeloop/dist/cli/main.js"),
    "build",
    join(root, "examples/nginx"),
    "--platform",
    "linux/amd64",
    "--tag",
    image,
    "--tarball",
    join(work, "image.tar"),
  ],
  { encoding: "utf8" },
);
if (build.status !== 0) throw new Error(build.stderr);

const path = [join(containerd, ".."), join(runc, ".."), process.env.PATH].join(":");
const socket = join(work, "containerd.sock");
writeFileSync(
  join(work, "containerd.toml"),
  `version = 3\nroot = "${join(work, "root")}"\nstate = "${join(work, "state")}"\ndisabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.nri.v1.nri"]\n[grpc]\n  address = "${socket}"\n`,
);
const daemon = spawn(containerd, ["--config", join(work, "containerd.toml")], {
  stdio: "ignore",
  env: { ...process.env, PATH: path },
});
const ctrRun = (...args) =>
  spawnSync(ctr, ["-a", socket, "-n", "k8s.io", ...args], {
    encoding: "utf8",
    env: { ...process.env, PATH: path },
  });
await pollUntil(async () => ctrRun("version").status === 0, { timeoutMs: 20_000, intervalMs: 100 });
const imported = ctrRun("images", "import", join(work, "image.tar"));
if (imported.status !== 0) throw new Error(imported.stderr);

const plane = await new ControlPlane({ profile: "apiserver" }).start();
const results = [];
try {
  await plane.installCrdObjects(readManifests([join(root, "examples/nginx/config/crd")]));
  const kube = join(work, "kube");
  spawnSync("mkdir", ["-p", kube]);
  copyFileSync(plane.kubeconfigPath, join(kube, "kubeconfig"));
  chmodSync(join(kube, "kubeconfig"), 0o644);
  const client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  let created = 0;
  for (const objects of [0, Number(values.objects)]) {
    const batch = async (from) => {
      for (let i = from; i < objects; i += 32) {
        await client.create({
          apiVersion: "proxy.example.com/v1",
          kind: "Nginx",
          metadata: { name: `n-${i}`, namespace: "default" },
          spec: { replicas: 0 },
        });
      }
    };
    await Promise.all(Array.from({ length: 32 }, (_, k) => batch(created + k)));
    created = objects;
    for (let run = 0; run < Number(values.runs); run++) {
      const port = await freePort();
      const id = `start-${objects}-${run}`;
      const started = performance.now();
      const container = spawn(
        ctr,
        [
          "-a",
          socket,
          "-n",
          "k8s.io",
          "run",
          "--rm",
          "--net-host",
          "--mount",
          `type=bind,src=${kube},dst=/kube,options=rbind:ro`,
          "--env",
          "KUBECONFIG=/kube/kubeconfig",
          "--env",
          "ENABLE_WEBHOOKS=false",
          "--env",
          `PROBE_PORT=${port}`,
          "--env",
          "METRICS_PORT=0",
          "--env",
          "LOG_LEVEL=warn",
          image,
          id,
        ],
        { stdio: "ignore", env: { ...process.env, PATH: path } },
      );
      await pollUntil(
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
        { timeoutMs: 120_000, intervalMs: 20 },
      );
      const ms = performance.now() - started;
      results.push({ objects, run, ms: Math.round(ms) });
      console.log(`${objects} objects, run ${run + 1}: start → ready ${Math.round(ms)} ms`);
      ctrRun("task", "kill", "-s", "SIGTERM", id);
      await new Promise((resolve) => container.on("exit", resolve));
    }
  }
  await client.close();
} finally {
  await plane.stop();
  daemon.kill("SIGTERM");
  await new Promise((resolve) => daemon.on("exit", resolve));
  rmSync(work, { recursive: true, force: true });
}
for (const objects of [...new Set(results.map((r) => r.objects))]) {
  const ms = results
    .filter((r) => r.objects === objects)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  console.log(`${objects} objects: median ${ms[Math.floor(ms.length / 2)]} ms (${ms.join(", ")})`);
}
