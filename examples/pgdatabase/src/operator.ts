import { pgDatabaseControllers } from "./controllers.ts";

/**
 * The operator's controllers as `kubeloop generate` reads them (RBAC is derived from what they
 * declare). main.ts builds its own, with the backup store and the metrics registry it is given.
 */
export const { pgDatabase, pgDatabaseBackup } = pgDatabaseControllers({
  backupDir: "/var/lib/pgdatabase/backups",
});
