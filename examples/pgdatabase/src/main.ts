// The PgDatabase operator's entry point: `npm start` (in this folder) runs it against the current
// KUBECONFIG. Settings, by flag or environment: the operator's own (--backup-dir / BACKUP_DIR,
// required; --pg-bin / PG_BIN; --resync-seconds / RESYNC_SECONDS; see options.ts), and the
// Manager's (--metrics-port / METRICS_PORT, --probe-port / PROBE_PORT, --leader-elect /
// LEADER_ELECT=true, …; see `optionsFromCommandLine`).
import { Manager, optionsFromCommandLine } from "kubeloop";
import { OPERATOR_NAME, pgDatabaseControllers } from "./controllers.ts";
import { operatorSettings } from "./options.ts";

const settings = operatorSettings();
const manager = new Manager(optionsFromCommandLine({ name: OPERATOR_NAME }));
const operator = pgDatabaseControllers({
  backupDir: settings.backupDir,
  tools: { binDir: settings.pgBin },
  registry: manager.metrics.registry,
  resyncMs: settings.resyncMs,
});
manager.add(operator.pgDatabase).add(operator.pgDatabaseBackup);
await manager.start();
