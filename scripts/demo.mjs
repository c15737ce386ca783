// `npm run demo`: the nginx operator on a live local cluster, shown through the machine's kubectl.
// It starts the cluster profile, installs the Nginx CRD, runs the operator, applies a sample and
// shows it converging; then it keeps running until Ctrl-C.
//   --exit   stop everything after showing it (what CI-like runs want)
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "packages/kubeloop/dist/cli/main.js");
const example = join(root, "examples/nginx");
const dir = join(root, ".kubeloop/demo");
const kubeconfig = join(dir, "kubeconfig");
const exitAfterShowing = process.argv.includes("--exit");
let operator;

function step(title) {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function run(command, args, { check = true, quiet = false } = {}) {
  const shown = command === process.execPath ? ["kubeloop", ...args.slice(1)] : [command, ...args];
  if (!quiet) console.log(`\u001b[2m$ ${shown.join(" ")}\u001b[0m`);
  const result = spawnSync(command, args, {
    stdio: quiet ? "pipe" : "inherit",
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

function cleanUp(code) {
  if (operator && operator.exitCode === null) operator.kill("SIGTERM");
  spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "inherit" });
  process.exit(code);
}

/** Polls until the Nginx's Ready condition is True, printing the table as it changes. */
async function waitForReady(name, count) {
  let last = "";
  for (let i = 0; i < 300; i++) {
    const table = run("kubectl", ["-n", "demo", "get", "nginx", name], { quiet: true, check: false }).stdout;
    if (table !== last) {
      process.stdout.write(table);
      last = table;
    }
    const ready = run(
      "kubectl",
      ["-n", "demo", "get", "nginx", name, "-o", "jsonpath={.status.readyCount}"],
      {
        quiet: true,
        check: false,
      },
    ).stdout;
    if (ready === String(count)) {
      // Show the converged state too, if the last poll's table was taken before it.
      const final = run("kubectl", ["-n", "demo", "get", "nginx", name], {
        quiet: true,
        check: false,
      }).stdout;
      if (final !== last) process.stdout.write(final);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  console.error("The Nginx did not become ready in time; the operator's log is above.");
  cleanUp(1);
}

step("Start a local cluster: etcd, kube-apiserver, controller manager, scheduler, 3 kwok nodes");
// A leftover from an interrupted demo is stopped first, so the demo always starts fresh.
spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "ignore" });
kubeloop("cluster", "start", "--profile", "cluster", "--nodes", "3", "--dir", dir);
kubectl("get", "nodes");

step("Install the Nginx CRD (proxy.example.com/v1alpha1)");
kubectl("apply", "-f", join(example, "config/crd"));
kubectl("wait", "--for=condition=Established", "crd/nginxes.proxy.example.com", "--timeout=60s");

step("Run the operator (examples/nginx: `npm start` in its folder)");
operator = spawn(process.execPath, [join(example, "src/main.ts")], {
  env: { ...process.env, KUBECONFIG: kubeconfig, METRICS_PORT: "0", PROBE_PORT: "0", LOG_LEVEL: "info" },
  stdio: ["ignore", "ignore", "inherit"],
});
operator.on("exit", (code, signal) => {
  if (signal !== "SIGTERM" && code !== 0) {
    console.error(`the operator exited (${code ?? signal})`);
    cleanUp(1);
  }
});
process.on("SIGINT", () => {
  console.log("\nStopping the operator and the cluster…");
  cleanUp(0);
});

step("Apply a sample: an Nginx with count 3");
kubectl("create", "namespace", "demo");
kubectl("-n", "demo", "apply", "-f", join(example, "config/samples/nginx.yaml"));
await waitForReady("web", 3);
kubectl("-n", "demo", "get", "deployment,pods", "-o", "wide");

step("Scale it to 5 (kubectl scale works through the scale subresource)");
kubectl("-n", "demo", "scale", "nginx", "web", "--replicas=5");
await waitForReady("web", 5);

step("A count above 100 is rejected by the API server itself");
run("kubectl", ["-n", "demo", "patch", "nginx", "web", "--type=merge", "-p", '{"spec":{"count":101}}'], {
  check: false,
});

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
