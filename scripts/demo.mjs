// `npm run demo`: the nginx operator on a live local cluster, shown through the machine's kubectl.
// It starts the cluster profile, installs the Nginx CRD, runs the operator, applies a sample and
// shows it converging, its admission and conversion webhooks at work; then it keeps running until
// Ctrl-C, SIGTERM or SIGHUP, which stop the operator and the cluster.
//   --exit        stop everything after showing it (what CI-like runs want)
//   --dir <path>  keep the cluster there instead of .kubeloop/demo (a second demo beside a first)
import { spawn, spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "packages/kubeloop/dist/cli/main.js");
const example = join(root, "examples/nginx");
const { values: flags } = parseArgs({
  options: { exit: { type: "boolean", default: false }, dir: { type: "string" } },
});
const dir = flags.dir ? resolve(flags.dir) : join(root, ".kubeloop/demo");
const kubeconfig = join(dir, "kubeconfig");
const exitAfterShowing = flags.exit;
const testing = await import(pathToFileURL(join(root, "packages/kubeloop/dist/testing/index.js")).href);
let operator;
let serving;

function step(title) {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function run(command, args, { check = true, quiet = false, input } = {}) {
  const shown = command === process.execPath ? ["kubeloop", ...args.slice(1)] : [command, ...args];
  if (!quiet) console.log(`\u001b[2m$ ${shown.join(" ")}\u001b[0m`);
  const result = spawnSync(command, args, {
    stdio: quiet ? "pipe" : [input === undefined ? "inherit" : "pipe", "inherit", "inherit"],
    input,
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  if (check && result.status !== 0) {
    console.error(`\n${shown.join(" ")} failed (exit ${result.status}).${quiet ? `\n${result.stderr}` : ""}`);
    cleanUp(1);
  }
  return result;
}

const kubectl = (...args) => run("kubectl", args);
const kubeloop = (...args) => run(process.execPath, [cli, ...args]);

let cleaningUp = false;

function cleanUp(code) {
  // Once: a signal may come from npm and from the process group (bootstrap.mjs) at the same time.
  if (cleaningUp) return;
  cleaningUp = true;
  if (operator && operator.exitCode === null) operator.kill("SIGTERM");
  spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "inherit" });
  serving?.dispose();
  process.exit(code);
}

/** Polls until the Nginx runs `count` pods, printing its table as it changes. */
async function waitForReady(name, count) {
  let last = "";
  for (let i = 0; i < 300; i++) {
    const table = run("kubectl", ["-n", "demo", "get", "nginx", name], { quiet: true, check: false }).stdout;
    if (table !== last) {
      process.stdout.write(table);
      last = table;
    }
    // NAME  REPLICAS  RUNNING  READY  AGE: the table that shows it converged is the one printed.
    if (table.split("\n")[1]?.trim().split(/\s+/)[2] === String(count)) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  console.error("The Nginx did not become ready in time; the operator's log is above.");
  cleanUp(1);
}

/** The operator logs "webhooks serving" once its HTTPS server listens; wait for the port to answer. */
async function waitForWebhooks() {
  const { connect } = await import("node:net");
  for (let i = 0; i < 100; i++) {
    const open = await new Promise((resolve) => {
      const socket = connect(serving.port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      }).on("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  console.error("The operator's webhook server did not start; its log is above.");
  cleanUp(1);
}

// Ctrl-C, and what a process supervisor or a CI timeout sends (SIGTERM), stop everything this
// started: the cluster runs detached from this process and would otherwise outlive it. Set before
// the cluster starts; a signal during a synchronous step is handled as soon as that step ends.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    console.log(`\n${signal}: stopping the operator and the cluster…`);
    cleanUp(0);
  });
}

step("Start a local cluster: etcd, kube-apiserver, controller manager, scheduler, 3 kwok nodes");
// A leftover from an interrupted demo is stopped first, so the demo always starts fresh.
spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "ignore" });
kubeloop("cluster", "start", "--profile", "cluster", "--nodes", "3", "--dir", dir);
kubectl("get", "nodes");

step("Install the Nginx CRD (proxy.example.com v1, and the first release's v1alpha1 through conversion)");
// config/ is written for the cluster (webhooks behind a Service); here the operator serves them
// from this machine, with a throwaway CA, as `kubeloop/testing`'s localWebhookServing arranges.
serving = await testing.localWebhookServing();
const local = (folder) => serving.rewrite(testing.readManifests([join(example, folder)]));
const applyObjects = (objects) =>
  run("kubectl", ["apply", "-f", "-"], {
    input: JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
  });
applyObjects(local("config/crd"));
kubectl("wait", "--for=condition=Established", "crd/nginxes.proxy.example.com", "--timeout=60s");

step("Run the operator (examples/nginx: `npm start` in its folder) with its webhooks");
operator = spawn(process.execPath, [join(example, "src/main.ts")], {
  env: {
    ...process.env,
    KUBECONFIG: kubeconfig,
    METRICS_PORT: "0",
    PROBE_PORT: "0",
    LOG_LEVEL: "info",
    WEBHOOK_CERT_DIR: serving.certDir,
    WEBHOOK_PORT: String(serving.port),
  },
  stdio: ["ignore", "ignore", "inherit"],
});
operator.on("exit", (code, signal) => {
  if (signal !== "SIGTERM" && code !== 0) {
    console.error(`the operator exited (${code ?? signal})`);
    cleanUp(1);
  }
});
await waitForWebhooks();
applyObjects(local("config/webhook"));

step("Apply a sample: an Nginx with 3 replicas (the defaulting webhook qualifies its image)");
kubectl("create", "namespace", "demo");
kubectl("-n", "demo", "apply", "-f", join(example, "config/samples/nginx.yaml"));
await waitForReady("web", 3);
kubectl("-n", "demo", "get", "deployment,pods", "-o", "wide");
kubectl("-n", "demo", "get", "nginx", "web", "-o", "jsonpath={.spec.image}{'\\n'}");

step("Scale it to 5 (kubectl scale works through the scale subresource)");
kubectl("-n", "demo", "scale", "nginx", "web", "--replicas=5");
await waitForReady("web", 5);

step("Replicas above 100 are rejected by the API server itself (the CRD's schema)");
run("kubectl", ["-n", "demo", "patch", "nginx", "web", "--type=merge", "-p", '{"spec":{"replicas":101}}'], {
  check: false,
});

step("An image from a registry the operator does not allow is rejected by its validating webhook");
run(
  "kubectl",
  [
    "-n",
    "demo",
    "patch",
    "nginx",
    "web",
    "--type=merge",
    "-p",
    '{"spec":{"image":"quay.io/nginx/nginx:1.27"}}',
  ],
  { check: false },
);

step("The first release's v1alpha1 (`count`) still works, converted by the operator's webhook");
kubectl("-n", "demo", "apply", "-f", join(example, "config/samples/nginx-v1alpha1.yaml"));
await waitForReady("legacy", 2);
// The same object read in each version: stored as v1, converted for v1alpha1 readers.
for (const version of ["v1alpha1", "v1"]) {
  kubectl(
    "-n",
    "demo",
    "get",
    `nginxes.${version}.proxy.example.com`,
    "legacy",
    "-o",
    "jsonpath={.apiVersion} {.spec}{'\\n'}",
  );
}

step("What kubectl describe shows");
kubectl("-n", "demo", "describe", "nginx", "web");

if (exitAfterShowing) {
  step("Stop");
  cleanUp(0);
} else {
  console.log(
    `\nThe operator and the cluster keep running. In another terminal:\n  export KUBECONFIG=${kubeconfig}`,
  );
  console.log("  kubectl -n demo get nginx,deploy,pods\nPress Ctrl-C to stop both.");
}
