import { existsSync } from "node:fs";
import { parseArgs } from "node:util";

const DEBIAN_PG_BIN = "/usr/lib/postgresql/15/bin";

/** The PgDatabase operator's own settings (the Manager's are `optionsFromCommandLine`'s). */
export interface OperatorSettings {
  backupDir: string;
  pgBin: string | undefined;
  resyncMs: number;
}

/**
 * The operator's own settings, by flag or environment (a flag wins over its variable):
 *   --backup-dir / BACKUP_DIR        the backup store (a PVC mount in the cluster); required
 *   --pg-bin / PG_BIN                the folder of pg_dump and pg_restore (default: Debian's
 *                                    PostgreSQL 15 folder when there, as in the operator's image,
 *                                    whose package.json asks for postgresql-client-15; else PATH)
 *   --resync-seconds / RESYNC_SECONDS how often each database is looked at again (default 30)
 * The Manager's flags (--metrics-port, --leader-elect, …) are left to it. A missing or malformed
 * setting is an error naming the flag and its variable.
 */
export function operatorSettings(
  args: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): OperatorSettings {
  const { values } = parseArgs({
    args: [...args],
    strict: false,
    options: {
      "backup-dir": { type: "string" },
      "pg-bin": { type: "string" },
      "resync-seconds": { type: "string" },
    },
  });
  const text = (flag: string) => (typeof values[flag] === "string" ? (values[flag] as string) : undefined);
  const backupDir = text("backup-dir") ?? env.BACKUP_DIR;
  if (!backupDir)
    throw new Error(
      "pgdatabase-operator: set the backup store with --backup-dir or BACKUP_DIR (a writable folder)",
    );
  const resync = text("resync-seconds") ?? env.RESYNC_SECONDS ?? "30";
  const resyncSeconds = Number(resync);
  if (!(resyncSeconds > 0))
    throw new Error(`pgdatabase-operator: --resync-seconds must be a number of seconds > 0, got "${resync}"`);
  return {
    backupDir,
    pgBin: text("pg-bin") ?? env.PG_BIN ?? (existsSync(DEBIAN_PG_BIN) ? DEBIAN_PG_BIN : undefined),
    resyncMs: resyncSeconds * 1000,
  };
}
