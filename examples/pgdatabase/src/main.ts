// The PgDatabase operator's entry point: `npm start` (in this folder) runs it against the current
// KUBECONFIG. Settings, by flag or environment:
//   --backup-dir / BACKUP_DIR        the backup store (a PVC mount in the cluster); required
//   --pg-bin / PG_BIN                the folder of pg_dump and pg_restore (default: Debian's
//                                    PostgreSQL 15 folder when there, as in the operator's image,
//                                    whose package.json asks for postgresql-client-15; else PATH)
//   --metrics-port / METRICS_PORT    (default 8080; 0 picks a free port)
//   --probe-port / PROBE_PORT        (default 8081)
//   --resync-seconds / RESYNC_SECONDS how often each database is looked at again (default 30)
//   --leader-elect / LEADER_ELECT=true
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { Manager } from "kubeloop";
import { OPERATOR_NAME, pgDatabaseControllers } from "./controllers.ts";

const DEBIAN_PG_BIN = "/usr/lib/postgresql/15/bin";

const { values } = parseArgs({
  options: {
    "backup-dir": { type: "string", default: process.env.BACKUP_DIR },
    "pg-bin": {
      type: "string",
      default: process.env.PG_BIN ?? (existsSync(DEBIAN_PG_BIN) ? DEBIAN_PG_BIN : undefined),
    },
    "metrics-port": { type: "string", default: process.env.METRICS_PORT ?? "8080" },
    "probe-port": { type: "string", default: process.env.PROBE_PORT ?? "8081" },
    "resync-seconds": { type: "string", default: process.env.RESYNC_SECONDS ?? "30" },
    "leader-elect": { type: "boolean", default: process.env.LEADER_ELECT === "true" },
    kubeconfig: { type: "string", default: process.env.KUBECONFIG },
  },
});

const backupDir = values["backup-dir"];
if (!backupDir) {
  process.stderr.write(
    "pgdatabase-operator: set the backup store with --backup-dir or BACKUP_DIR (a writable folder)" + "\n",
  );
  process.exit(2);
}

const resyncSeconds = Number(values["resync-seconds"]);
if (!(resyncSeconds > 0)) {
  process.stderr.write(
    `pgdatabase-operator: --resync-seconds must be a number of seconds > 0, got "${values["resync-seconds"]}"\n`,
  );
  process.exit(2);
}

const manager = new Manager({
  ...(values.kubeconfig ? { kubeconfig: values.kubeconfig.split(":")[0] } : {}),
  metrics: { port: Number(values["metrics-port"]) },
  probes: { port: Number(values["probe-port"]) },
  leaderElection: values["leader-elect"] ? { id: OPERATOR_NAME } : false,
});
const operator = pgDatabaseControllers({
  backupDir,
  tools: { binDir: values["pg-bin"] },
  registry: manager.metrics.registry,
  resyncMs: resyncSeconds * 1000,
});
manager.add(operator.pgDatabase).add(operator.pgDatabaseBackup);
await manager.start();
