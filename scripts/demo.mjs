// `npm run demo`: a live local Kubernetes cluster, shown through the machine's kubectl.
// Pass --keep to leave it running afterwards (stop it with `npx kubeloop cluster stop --dir .kubeloop/demo`).
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "packages/kubeloop/dist/cli/main.js");
const dir = join(root, ".kubeloop/demo");
const keep = process.argv.includes("--keep");
const kubeconfig = join(dir, "kubeconfig");

function step(title) {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function run(command, args, { check = true } = {}) {
  const shown = command === process.execPath ? ["kubeloop", ...args.slice(1)] : [command, ...args];
  console.log(`\u001b[2m$ ${shown.join(" ")}\u001b[0m`);
  const result = spawnSync(command, args, {
    stdio: "inherit",
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  if (check && result.status !== 0) {
    console.error(`\n${command} ${args.join(" ")} failed (exit ${result.status}).`);
    if (!keep) spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "inherit" });
    process.exit(result.status ?? 1);
  }
  return result;
}

const kubectl = (...args) => run("kubectl", args);
const kubeloop = (...args) => run(process.execPath, [cli, ...args]);

step("Start a local cluster: etcd, kube-apiserver, controller manager, scheduler, 3 kwok nodes");
// A leftover from an interrupted demo is stopped first, so the demo always starts fresh.
spawnSync(process.execPath, [cli, "cluster", "stop", "--dir", dir], { stdio: "ignore" });
kubeloop("cluster", "start", "--profile", "cluster", "--nodes", "3", "--dir", dir);

step("The server is a real Kubernetes, built from source");
kubectl("version");
kubectl("get", "nodes", "-o", "wide");

step("A Deployment of 3 replicas: scheduled onto the fake nodes, Running and Ready");
kubectl("create", "namespace", "demo");
kubectl("-n", "demo", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=3");
kubectl("-n", "demo", "rollout", "status", "deployment/web", "--timeout=120s");
kubectl("-n", "demo", "get", "deployment,replicaset,pods", "-o", "wide");

step("Scale to 5, then delete: garbage collection removes the ReplicaSet and its Pods");
kubectl("-n", "demo", "scale", "deployment/web", "--replicas=5");
kubectl("-n", "demo", "rollout", "status", "deployment/web", "--timeout=120s");
kubectl("-n", "demo", "delete", "deployment", "web");
kubectl("-n", "demo", "wait", "--for=delete", "pods", "-l", "app=web", "--timeout=120s");
kubectl("-n", "demo", "get", "all");

step("Cluster status");
kubeloop("cluster", "status", "--dir", dir);

if (keep) {
  console.log(`\nThe cluster keeps running. Use it with:\n  export KUBECONFIG=${kubeconfig}`);
  console.log(`Stop it with:\n  npx kubeloop cluster stop --dir ${dir}`);
} else {
  step("Stop");
  kubeloop("cluster", "stop", "--dir", dir);
  console.log("\nDemo finished. Run `npm run demo -- --keep` to keep the cluster running afterwards.");
}
