// `npm run demo:sampledb`: seed 002's operator (examples/sampledb) on a cluster of real nodes
// (kubelets, containerd, runc; as root), shown as the seed does, through `kubectl get sampledb -o
// wide` while a SampleDB is created, written to, backed up, its primary killed, and deleted with a
// snapshot. Everything is stopped at the end (or on Ctrl-C).
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const example = join(root, "examples/sampledb");
const testing = await import(pathToFileURL(join(root, "packages/kubeloop/dist/testing/index.js")).href);
let plane;
let operator;
let postgres;

function step(title) {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function run(command, args, { quiet = false, check = true, input } = {}) {
  if (!quiet) console.log(`\u001b[2m$ ${[command, ...args].join(" ")}\u001b[0m`);
  const result = spawnSync(command, args, {
    stdio: [input === undefined ? "ignore" : "pipe", quiet ? "pipe" : "inherit", quiet ? "pipe" : "inherit"],
    encoding: "utf8",
    ...(input === undefined ? {} : { input }),
    env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
  });
  if (check && result.status !== 0)
    throw new Error(
      `${command} ${args.join(" ")} failed (exit ${result.status}).${quiet ? `\n${result.stderr}` : ""}`,
    );
  return result;
}

const kubectl = (...args) => run("kubectl", ["-n", "demo", ...args]);
const get = (args, path) =>
  run("kubectl", ["-n", "demo", ...args, "-o", `jsonpath=${path}`], { quiet: true, check: false }).stdout ??
  "";
const table = () =>
  run("kubectl", ["-n", "demo", "get", "sampledb", "-o", "wide"], { quiet: true, check: false }).stdout;

/** `watch kubectl get sampledb -o wide`: the table printed whenever it changes, until `check()`. */
async function watch(what, check, show = table) {
  console.log("\u001b[2m$ watch kubectl get sampledb -o wide\u001b[0m");
  let last = "";
  for (let i = 0; i < 1500; i++) {
    const done = check(); // before the table, so that the last table shown is the one it saw
    const shown = show() ?? "";
    // Ages tick every second; print the table when something else in it changed.
    const changed = shown.replace(/\b\d+[smh]\d*[smh]?\b/g, "");
    if (shown && changed !== last) {
      process.stdout.write(`${new Date().toISOString().slice(11, 19)}\n${shown}`);
      last = changed;
    }
    if (done) return;
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  throw new Error(`Timed out waiting for ${what}; the operator's log is above.`);
}

/** A pod of the PostgreSQL image running `script` as an application would: libpq's environment from the SampleDB's ConfigMap and Secret. */
async function app(name, script) {
  const ref = (kind, env, key) => ({
    name: env,
    valueFrom: { [kind]: { name: `shop-${kind === "configMapKeyRef" ? "connection" : "credentials"}`, key } },
  });
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "demo" },
    spec: {
      restartPolicy: "Never",
      securityContext: { runAsNonRoot: true, runAsUser: 65532 },
      containers: [
        {
          name: "app",
          image: postgres,
          command: ["sh", "-c", script],
          env: [
            ref("configMapKeyRef", "PGHOST", "host"),
            ref("configMapKeyRef", "PGDATABASE", "database"),
            ref("secretKeyRef", "PGUSER", "username"),
            ref("secretKeyRef", "PGPASSWORD", "password"),
          ],
        },
      ],
    },
  };
  console.log(
    `\u001b[2m# pod ${name}: image ${postgres}, libpq's env from shop-connection and shop-credentials\u001b[0m`,
  );
  console.log(`\u001b[2m$ sh -c ${JSON.stringify(script)}\u001b[0m`);
  run("kubectl", ["apply", "-f", "-"], { quiet: true, input: JSON.stringify(pod) });
  for (let i = 0; i < 300; i++) {
    const phase = get(["get", "pod", name], "{.status.phase}");
    if (phase === "Succeeded" || phase === "Failed") break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  run("kubectl", ["-n", "demo", "logs", name], { check: false, quiet: false });
}

let stopping = false;
async function cleanUp(code) {
  if (stopping) return;
  stopping = true;
  step("Stopping the operator and the cluster");
  if (operator && operator.exitCode === null) {
    const exited = new Promise((resolve) => operator.once("exit", resolve));
    operator.kill("SIGTERM");
    await exited;
  }
  await plane?.stop();
  console.log("Stopped.");
  process.exit(code);
}
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => cleanUp(0));

async function main() {
  step("A cluster of two real nodes (kubelet, containerd, runc), on loopback");
  plane = await new testing.ControlPlane({ profile: "node", nodes: 2 }).start();
  postgres = await plane.loadBaseImage("postgres");
  console.log(`API server ${plane.server}; PostgreSQL image ${postgres} (Debian 12's postgresql-15)`);
  console.log(`export KUBECONFIG=${plane.kubeconfigPath}`);

  step("The SampleDB CRD, and the operator (examples/sampledb/src/main.ts)");
  run("kubectl", ["apply", "-k", join(example, "config/crd")]);
  operator = spawn(process.execPath, [join(example, "src/main.ts")], {
    env: {
      ...process.env,
      KUBECONFIG: plane.kubeconfigPath,
      METRICS_PORT: "0",
      PROBE_PORT: "0",
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });

  step("A SampleDB: a primary and a synchronous replica, backed up every 30 s");
  run("kubectl", ["create", "namespace", "demo"]);
  const shop = `apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: shop, namespace: demo }
spec:
  instances: 2
  storage: 256Mi
  image: ${postgres}
  replication: { mode: synchronous, number: 1, durability: preferred }
  backup: { schedule: 30s, retention: 3 }
`;
  process.stdout.write(shop);
  run("kubectl", ["apply", "-f", "-"], { input: shop });
  await watch("shop to be Ready", () => get(["get", "sampledb", "shop"], "{.status.phase}") === "Ready");
  kubectl("get", "statefulset,pod,pvc,service,job");

  step("The app writes rows through the read-write Service, with the credentials Secret");
  await app(
    "writer",
    "psql -v ON_ERROR_STOP=1 -qc 'create table orders (id int primary key, item text)' -c \"insert into orders select g, 'item ' || g from generate_series(1, 1000) g\" && psql -Atc 'select count(*) from orders'",
  );
  const written = new Date().toISOString();

  step("A scheduled backup: the operator's Job runs pg_dump into the backup volume");
  await watch(
    "a backup after the rows",
    () => get(["get", "sampledb", "shop"], "{.status.lastBackup}") > written,
  );
  kubectl("get", "jobs");

  step("The primary's pod is killed");
  const primary = get(["get", "sampledb", "shop"], "{.status.primary}");
  kubectl("delete", "pod", primary, "--wait=false");
  await watch(
    "a replica to be promoted and the old primary to rejoin",
    () =>
      get(["get", "sampledb", "shop"], "{.status.primary}") !== primary &&
      get(["get", "sampledb", "shop"], "{.status.phase}") === "Ready",
  );
  kubectl("get", "pods", "-L", "seed.example.com/role");
  await app("reader", "psql -Atc 'select count(*) from orders' && psql -Atc 'select pg_is_in_recovery()'");

  step("The SampleDB deleted: a final snapshot first, then the StatefulSet and its volumes");
  kubectl("delete", "sampledb", "shop", "--wait=false");
  await watch(
    "shop to be gone",
    () => !run("kubectl", ["-n", "demo", "get", "sampledb", "shop"], { quiet: true, check: false }).stdout,
    () =>
      `${table() ?? ""}${get(["get", "jobs"], "{range .items[*]}job/{.metadata.name} {.status.succeeded}\n{end}")}`,
  );
  kubectl("get", "statefulset,pvc");
  kubectl(
    "get",
    "events",
    "--field-selector",
    "involvedObject.name=shop",
    "--sort-by=.metadata.creationTimestamp",
  );
}

try {
  await main();
  await cleanUp(0);
} catch (error) {
  console.error(`\n${error.message}`);
  await cleanUp(1);
}
