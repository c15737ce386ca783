import type pg from "pg";
import type { Pass, Status } from "./names.ts";
import * as sql from "./postgres.ts";
import type { PgDatabaseObject } from "./resources.ts";

/** A window of the connection peak: an hour's busiest moment sets the next hour's limit. */
const PEAK_WINDOW_MS = 60 * 60_000;

/**
 * Step 2 of a live PgDatabase: in-place changes — the owner (the new one takes the database's
 * objects, the old roles go), the connection limit (fixed, or following the observed peak), the
 * extensions — and a change made on the server out of band set back, with a Warning.
 */
export async function applyChanges(pass: Pass, status: Status, existed: boolean) {
  const { shared, db, ctx, names, admin, server } = pass;
  const inDatabase = <R>(work: (client: pg.ClientBase) => Promise<R>) =>
    shared.servers.with(server, names.databaseName, work);
  const stats = await admin((client) => sql.databaseStats(client, names.databaseName));
  const peak = peakOf(status, stats.connections, ctx.now());
  const limit = connectionLimitFor(db, peak.peakConnections);
  const current = await admin((client) => sql.readDatabase(client, names.databaseName));
  const previous = current.owner && current.owner !== names.owner ? current.owner : undefined;
  if (previous) await inDatabase((client) => sql.reassignOwned(client, previous, names.owner));
  if (current.owner !== names.owner || current.connectionLimit !== limit) {
    await admin((client) =>
      sql.alterDatabase(client, names.databaseName, {
        ...(current.owner !== names.owner ? { owner: names.owner } : {}),
        ...(current.connectionLimit !== limit ? { connectionLimit: limit } : {}),
      }),
    );
    // What the operator applied last (status) differs from the server: changed out of band.
    const was = `owner "${current.owner}", connection limit ${current.connectionLimit}`;
    if (status.owner === names.owner && status.connectionLimit === limit)
      ctx.event("Warning", "DriftCorrected", `The server had ${was}; set back to "${names.owner}", ${limit}`);
    else {
      const why = db.spec.autoConnectionLimit ? ` (peak ${peak.peakConnections} connections)` : "";
      ctx.event("Normal", "Updated", `Owner "${names.owner}", connection limit ${limit}${why}`);
    }
  }
  if (previous)
    await admin(async (client) => {
      for (const role of [`${previous.slice(0, 61)}_a`, `${previous.slice(0, 61)}_b`, previous])
        await sql.dropRole(client, role);
    }).catch((error: Error) =>
      ctx.event("Warning", "RoleKept", `The previous owner's roles stay: ${error.message}`),
    );
  // A connection to the database itself only when an extension is missing from the last look.
  const known = status.extensions;
  const extensions =
    known && existed && (db.spec.extensions ?? []).every((e) => known.includes(e))
      ? known
      : await inDatabase(async (client) => {
          for (const extension of db.spec.extensions ?? []) await sql.createExtension(client, extension);
          return sql.installedExtensions(client);
        });
  return { stats, peak, limit, extensions };
}

/**
 * The peak of connections in the current window; a new window starts from the current count, so
 * the limit follows the load down as well as up.
 */
function peakOf(status: Status, connections: number, now: Date) {
  const start = status.peakWindowStart ? Date.parse(status.peakWindowStart) : Number.NaN;
  if (Number.isNaN(start) || now.getTime() - start >= PEAK_WINDOW_MS)
    return { peakConnections: connections, peakWindowStart: now.toISOString() };
  return {
    peakConnections: Math.max(connections, status.peakConnections ?? 0),
    peakWindowStart: status.peakWindowStart ?? now.toISOString(),
  };
}

/** The spec's fixed limit, or the observed peak times the headroom within the user's bounds. */
export function connectionLimitFor(db: PgDatabaseObject, peak: number): number {
  const auto = db.spec.autoConnectionLimit;
  if (!auto) return db.spec.connectionLimit;
  return Math.min(auto.max, Math.max(auto.min, Math.ceil(peak * auto.headroom)));
}
