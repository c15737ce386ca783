import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { RetryableError } from "kubeloop";
import type { ServerAddress } from "./postgres.ts";

/**
 * Backups as files: pg_dump in custom format into the backup store (a folder: a PVC mount in the
 * cluster, a temp folder in tests), and pg_restore back. The password reaches the tools through
 * PGPASSWORD in their environment, never their arguments (which `ps` shows) or an error message.
 */

export interface Tools {
  /** The folder of pg_dump and pg_restore; default: found on PATH. */
  binDir?: string | undefined;
}

/** Where a backup's file lives in the store: one folder per namespace, one file per backup. */
export function backupPath(store: string, namespace: string, backup: string): string {
  return join(store, namespace, `${backup}.dump`);
}

/**
 * Dumps `database` to `path`: written to `path.partial` and renamed when complete, so a file at
 * `path` is always a whole dump, and a dump cut short by a restart is simply started again.
 */
export async function dump(
  tools: Tools,
  server: ServerAddress,
  database: string,
  path: string,
): Promise<{ sizeBytes: number; sha256: string }> {
  await mkdir(dirname(path), { recursive: true });
  const partial = `${path}.partial`;
  await rm(partial, { force: true });
  await runTool(
    tools,
    "pg_dump",
    [...connection(server), "--format=custom", `--file=${partial}`, database],
    server,
  );
  const sha256 = await sha256File(partial);
  const { size } = await stat(partial);
  await rename(partial, path);
  return { sizeBytes: size, sha256 };
}

/**
 * Restores a dump into an existing, empty `database`; objects are created as `owner` (not as they
 * were owned in the source database, which may have had another owner role).
 */
export async function restore(
  tools: Tools,
  server: ServerAddress,
  database: string,
  owner: string,
  path: string,
): Promise<void> {
  await runTool(
    tools,
    "pg_restore",
    [...connection(server), `--dbname=${database}`, "--no-owner", `--role=${owner}`, "--exit-on-error", path],
    server,
  );
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

function connection(server: ServerAddress): string[] {
  return [`--host=${server.host}`, `--port=${server.port}`, `--username=${server.username}`, "--no-password"];
}

function runTool(
  tools: Tools,
  name: "pg_dump" | "pg_restore",
  args: string[],
  server: ServerAddress,
): Promise<void> {
  const binary = tools.binDir ? join(tools.binDir, name) : name;
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      env: { ...process.env, PGPASSWORD: server.password, PGCONNECT_TIMEOUT: "10" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString("utf8");
    });
    child.on("error", (error) =>
      reject(
        new RetryableError(
          `${name} could not be run (${binary}: ${error.message}); install PostgreSQL's client tools (Debian: postgresql-client) of the server's major version`,
          { reason: "ToolMissing", cause: error },
        ),
      ),
    );
    child.on("close", (code, signal) => {
      if (code === 0) return resolve();
      const why = stderr.trim().split("\n").slice(-3).join(" ") || `exit ${code ?? signal}`;
      reject(
        new RetryableError(`${name} failed: ${why}`, {
          reason: name === "pg_dump" ? "DumpFailed" : "RestoreFailed",
        }),
      );
    });
  });
}

/** A backup's file must be there and match the checksum recorded when it was written. */
export async function checkChecksum(backup: {
  status?: { path?: string; sha256?: string } | undefined;
}): Promise<void> {
  const path = backup.status?.path ?? "";
  const sha = await sha256File(path).catch((error: Error) => {
    throw new RetryableError(`Backup file ${path} cannot be read: ${error.message}`, {
      reason: "BackupUnreadable",
    });
  });
  if (sha !== backup.status?.sha256)
    throw new RetryableError(
      `Backup file ${path} fails its checksum (sha256 ${sha}, recorded ${backup.status?.sha256})`,
      {
        reason: "BackupCorrupt",
      },
    );
}
