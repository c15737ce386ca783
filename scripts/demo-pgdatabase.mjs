// `npm run demo:pgdatabase`: the PgDatabase operator against a real PostgreSQL server and a local API
// server, shown through kubectl and psql: create a database, write rows as the app, back it up,
// drop the database behind the operator's back, and watch it come back from the backup with the
// rows. Then it keeps running until Ctrl-C.
//   --exit   stop everything after showing it
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const example = join(root, "examples/pgdatabase");
const exitAfterShowing = process.argv.includes("--exit");
const testing = await import(pathToFileURL(join(root, "packages/kubeloop/dist/testing/index.js")).href);
const servers = await import(
  pathToFileURL(join(root, "packages/kubeloop/dist/testing/servers/index.js")).href
);
const backupDir = mkdtempSync(join(tmpdir(), "pgdatabase-demo-backups-"));
let pg;
let plane;
let operator;

function step(title) {
  console.log(`\n\u001b[1m== ${title}\u001b[0m`);
}

function run(command, args, { quiet = false, check = true, env = {}, echo = !quiet } = {}) {
  if (echo) console.log(`\u001b[2m$ ${[command, ...args].join(" ")}\u001b[0m`);
  const result = spawnSync(command, args, {
    stdio: quiet ? "pipe" : ["ignore", "inherit", "inherit"],
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG: plane.kubeconfigPath, ...env },
  });
  if (check && result.status !== 0) {
    console.error(
      `\n${command} ${args.join(" ")} failed (exit ${result.status}).${quiet ? `\n${result.stderr}` : ""}`,
    );
    return cleanUp(1);
  }
  return result;
}

const kubectl = (...args) => run("kubectl", ["-n", "demo", ...args]);
const jsonpath = (args, path) =>
  run("kubectl", ["-n", "demo", ...args, "-o", `jsonpath=${path}`], { quiet: true, check: false }).stdout;
/** psql as the app, with the connection string from the credentials Secret the operator wrote. */
function psqlAsApp(sql) {
  const uri = Buffer.from(
    jsonpath(["get", "secret", "shop-credentials"], "{.data.uri}"),
    "base64",
  ).toString();
  console.log(
    `\u001b[2m$ psql "$(kubectl get secret shop-credentials -o jsonpath='{.data.uri}' | base64 -d)" -c "${sql}"\u001b[0m`,
  );
  return run(join(pg.binDir, "psql"), ["-X", uri, "-c", sql], { echo: false });
}

async function waitFor(what, check, show) {
  let last = "";
  for (let i = 0; i < 600; i++) {
    const shown = show?.() ?? "";
    // Ages tick every second; print the table when something else in it changed.
    const changed = shown.replace(/\b\d+[smh]\b/g, "");
    if (shown && changed !== last) {
      process.stdout.write(shown);
      last = changed;
    }
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  console.error(`Timed out waiting for ${what}; the operator's log is above.`);
  await cleanUp(1);
}

async function cleanUp(code) {
  if (operator && operator.exitCode === null) operator.kill("SIGTERM");
  await plane?.stop();
  await pg?.stop();
  rmSync(backupDir, { recursive: true, force: true });
  process.exit(code);
}
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => cleanUp(0));

step("A PostgreSQL server and an API server, on loopback");
[pg, plane] = await Promise.all([
  new servers.PostgresServer().start(),
  new testing.ControlPlane({ profile: "apiserver", crds: [join(example, "config/crd")] }).start(),
]);
console.log(`PostgreSQL ${pg.version} on 127.0.0.1:${pg.port}; API server ${plane.server}`);
console.log(`export KUBECONFIG=${plane.kubeconfigPath}`);

step("The operator (examples/pgdatabase/src/main.ts), looking at each database every 5 s");
operator = spawn(process.execPath, [join(example, "src/main.ts")], {
  env: {
    ...process.env,
    KUBECONFIG: plane.kubeconfigPath,
    BACKUP_DIR: backupDir,
    PG_BIN: pg.binDir,
    METRICS_PORT: "0",
    PROBE_PORT: "0",
    RESYNC_SECONDS: "5",
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
  },
  stdio: ["ignore", "inherit", "inherit"],
});

step("A PgDatabase, with the server's admin credentials in a Secret");
run("kubectl", ["create", "namespace", "demo"]);
kubectl(
  "create",
  "secret",
  "generic",
  "pg-admin",
  `--from-literal=host=${pg.host}`,
  `--from-literal=port=${pg.port}`,
  `--from-literal=username=${pg.user}`,
  `--from-literal=password=${pg.password}`,
);
kubectl("apply", "-f", join(example, "config/samples/pgdatabase.yaml"));
const isReady = () =>
  jsonpath(["get", "pgdatabase", "shop"], '{.status.conditions[?(@.type=="Ready")].status}') === "True";
await waitFor(
  "shop to be Ready",
  isReady,
  () => run("kubectl", ["-n", "demo", "get", "pgdatabase"], { quiet: true }).stdout,
);
kubectl("get", "secret", "shop-credentials", "-o", "go-template={{range $key, $_ := .data}}{{$key}} {{end}}");
console.log();

step("The app writes rows, with the credentials Secret");
psqlAsApp(
  "create table orders (id int primary key, item text); insert into orders select g, 'item ' || g from generate_series(1, 1000) g",
);
psqlAsApp("select count(*) from orders");

step("A backup (pg_dump, custom format)");
kubectl("apply", "-f", join(example, "config/samples/pgdatabasebackup.yaml"));
await waitFor(
  "the backup",
  () => jsonpath(["get", "pgdatabasebackup", "shop-backup"], "{.status.phase}") === "Completed",
  () => run("kubectl", ["-n", "demo", "get", "pgdatabasebackup"], { quiet: true }).stdout,
);

step("Someone drops the database behind the operator's back");
console.log('\u001b[2m$ psql "$ADMIN_URL" -c "drop database shop with (force)"\u001b[0m');
run(join(pg.binDir, "psql"), ["-X", pg.url(), "-c", "drop database shop with (force)"], { echo: false });

step("The operator notices, and recreates it from the latest backup");
await waitFor(
  "the recovery",
  () =>
    jsonpath(["get", "pgdatabase", "shop"], "{.status.restore.reason}/{.status.restore.phase}") ===
      "Recovery/Completed" && isReady(),
  () => run("kubectl", ["-n", "demo", "get", "pgdatabase", "shop"], { quiet: true }).stdout,
);
kubectl("get", "events", "--field-selector", "involvedObject.name=shop", "--sort-by=.lastTimestamp");
psqlAsApp("select count(*) from orders");

if (exitAfterShowing) await cleanUp(0);
console.log(
  `\nRunning; try kubectl yourself (export KUBECONFIG=${plane.kubeconfigPath}). Ctrl-C stops everything.`,
);
