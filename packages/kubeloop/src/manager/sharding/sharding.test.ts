import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../../test/helpers.js";
import type { Client } from "../../client/client.js";
import { ConfigMap, Lease } from "../../k8s/index.js";
import type { ControlPlane } from "../../testing/control-plane.js";
import { sleep } from "../../util/index.js";
import { drainLabel, ownerOf, RING_LABEL, shardLabel } from "./ring.js";

/**
 * Sharding across replica processes on a real API server. Every reconcile appends a start and an
 * end line to one journal shared by all replicas (O_APPEND: the file's order is the order the
 * writes happened), which proves that no object was ever reconciled by two replicas at once and
 * that every object's last update was seen. `SHARDING_OBJECTS` sets the object count: 3,000 by
 * default (the figure), 82 s on the 2-core machine at moderate load and 4 minutes with a
 * load average above 20.
 */

const OBJECTS = Number(process.env.SHARDING_OBJECTS ?? "3000");
const RING = "test-ring";
const NS = "shards";
const SCRIPT = join(import.meta.dirname, "../../../test/scripts/sharded-replica.mjs");

let plane: ControlPlane;
let client: Client;
let dir: string;
let journal: string;
const replicas = new Map<
  string,
  { child: ChildProcess; exited: Promise<number | null>; log: () => string }
>();
/** Journal offsets at which a replica was known dead (SIGKILL): its open reconciles ended there. */
const deaths: { id: string; offset: number }[] = [];
/** The test's own record of each object's latest `data.v`. */
const written = new Map<string, number>();

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
  dir = mkdtempSync(join(tmpdir(), "kubeloop-sharding-"));
  journal = join(dir, "journal");
  writeFileSync(journal, "");
}, 120_000);

let failed = false;
afterEach((context) => {
  if (context.task.result?.state === "fail") failed = true;
});

afterAll(async () => {
  for (const { child } of replicas.values()) child.kill("SIGKILL");
  await stopPlane(plane, client);
  // Kept when a test failed: the replicas' logs are there.
  if (dir && !failed) rmSync(dir, { recursive: true, force: true });
});

function start(id: string): void {
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      ...process.env,
      KUBECONFIG: plane.kubeconfigPath,
      SHARD_ID: id,
      NAMESPACE: NS,
      RING,
      JOURNAL: journal,
      STATUS_DIR: dir,
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const file = createWriteStream(join(dir, `${id}.log`));
  child.stdout?.pipe(file);
  child.stderr?.pipe(file);
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  replicas.set(id, { child, exited, log: () => log });
}

async function stop(id: string, signal: "SIGTERM" | "SIGKILL"): Promise<number | null> {
  const replica = replicas.get(id);
  if (!replica) throw new Error(`no replica ${id}`);
  replica.child.kill(signal);
  const code = await replica.exited;
  if (signal === "SIGKILL") deaths.push({ id, offset: readFileSync(journal).length });
  replicas.delete(id);
  rmSync(join(dir, `${id}.json`), { force: true });
  return code;
}

interface Audit {
  reconciles: number;
  /** A start of a key while another replica's reconcile of it had not ended. */
  overlaps: string[];
  /** The `v` of each key's last finished reconcile. */
  lastSeen: Map<string, number>;
  byReplica: Map<string, number>;
}

/** Reads the journal: overlapping reconciles of one key, and what each key's last reconcile saw. */
function audit(): Audit {
  const text = readFileSync(journal, "utf8");
  const open = new Map<string, string>(); // key → replica reconciling it
  const result: Audit = { reconciles: 0, overlaps: [], lastSeen: new Map(), byReplica: new Map() };
  let offset = 0;
  let death = 0;
  const sortedDeaths = [...deaths].sort((a, b) => a.offset - b.offset);
  for (const line of text.split("\n")) {
    while (death < sortedDeaths.length && (sortedDeaths[death] as { offset: number }).offset <= offset) {
      const dead = (sortedDeaths[death] as { id: string }).id;
      for (const [key, id] of open) if (id === dead) open.delete(key);
      death++;
    }
    offset += Buffer.byteLength(line) + 1;
    if (!line) continue;
    const [event, id, key, v] = line.split(" ") as [string, string, string, string];
    if (event === "start") {
      const holder = open.get(key);
      if (holder !== undefined) result.overlaps.push(`${key}: ${holder} and ${id}`);
      open.set(key, id);
    } else {
      if (open.get(key) === id) open.delete(key);
      result.reconciles++;
      result.lastSeen.set(key, Number(v));
      result.byReplica.set(id, (result.byReplica.get(id) ?? 0) + 1);
    }
  }
  return result;
}

function statusOf(id: string): { cache: number; sharder: boolean } | undefined {
  const file = join(dir, `${id}.json`);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")); // the replica renames it into place whole
}

/**
 * Converged: every object labelled with one of `live` (as the ring of `live` assigns it), none
 * draining, the caches of the live replicas add up to all objects, and each object's latest
 * update was seen by a reconcile.
 */
async function converged(live: string[]): Promise<boolean> {
  await sleep(500); // a list and a journal read per look: not too often
  for (const [id, replica] of replicas)
    if (replica.child.exitCode !== null || replica.child.signalCode !== null)
      throw new Error(
        `replica ${id} exited (${replica.child.exitCode ?? replica.child.signalCode}):\n${replica.log().slice(-3000)}`,
      );
  const list = await client.listMetadata(ConfigMap, { namespace: NS });
  if (list.items.length !== OBJECTS) return false;
  for (const item of list.items) {
    const labels = item.metadata?.labels ?? {};
    const name = item.metadata?.name ?? "";
    if (drainLabel(RING) in labels) return false;
    if (labels[shardLabel(RING)] !== ownerOf(`/ConfigMap/${NS}/${name}`, live)) return false;
  }
  const caches = live.map((id) => statusOf(id)?.cache ?? -1);
  if (caches.reduce((a, b) => a + b, 0) !== OBJECTS) return false;
  const { lastSeen } = audit();
  for (const [name, v] of written) if (lastSeen.get(`${NS}/${name}`) !== v) return false;
  return true;
}

async function pool<T>(items: T[], limit: number, run: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await run(items[next++] as T);
    }),
  );
}

/** Updates random objects' `data.v` until stopped: the churn moves happen under. */
function churn(perSecond: number): () => Promise<void> {
  let running = true;
  const loop = (async () => {
    while (running) {
      const name = `cm-${Math.floor(Math.random() * OBJECTS)}`;
      const v = (written.get(name) ?? 0) + 1;
      written.set(name, v);
      await client.patch(ConfigMap, name, { data: { v: String(v) } }, { namespace: NS });
      await sleep(1000 / perSecond);
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

describe(`sharding ${OBJECTS} objects across replica processes`, () => {
  it("3 replicas share them, each caching about a third", async () => {
    const names = Array.from({ length: OBJECTS }, (_, i) => `cm-${i}`);
    await pool(names, 32, async (name) => {
      written.set(name, 0);
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name, namespace: NS },
        data: { v: "0" },
      });
    });
    for (const id of ["r1", "r2", "r3"]) start(id);
    await until(() => converged(["r1", "r2", "r3"]), 150_000, "3 replicas to share the objects");
    for (const id of ["r1", "r2", "r3"]) {
      const cache = statusOf(id)?.cache ?? 0;
      expect(cache, `cache of ${id}`).toBeGreaterThan((OBJECTS / 3) * 0.8);
      expect(cache, `cache of ${id}`).toBeLessThan((OBJECTS / 3) * 1.2);
    }
    expect(["r1", "r2", "r3"].filter((id) => statusOf(id)?.sharder)).toHaveLength(1);
    const leases = await client.list(Lease, { namespace: NS, labelSelector: `${RING_LABEL}=${RING}` });
    expect(leases.items.map((l) => l.spec?.holderIdentity).sort()).toEqual(["r1", "r2", "r3"]);
    const { overlaps, byReplica } = audit();
    expect(overlaps).toEqual([]);
    expect([...byReplica.keys()].sort()).toEqual(["r1", "r2", "r3"]);
  }, 240_000);

  it("scales 3 → 5 → 2 and survives a SIGKILL during churn: no object reconciled twice at once, no update lost", async () => {
    const stopChurn = churn(40);
    try {
      start("r4");
      start("r5");
      await until(
        () => converged(["r1", "r2", "r3", "r4", "r5"]),
        150_000,
        "5 replicas to share the objects",
      );
      for (const id of ["r1", "r2", "r3", "r4", "r5"]) {
        const cache = statusOf(id)?.cache ?? 0;
        expect(cache, `cache of ${id}`).toBeGreaterThan((OBJECTS / 5) * 0.75);
        expect(cache, `cache of ${id}`).toBeLessThan((OBJECTS / 5) * 1.25);
      }
      // Scale down to 2: graceful stops release their Leases, and their objects move at once.
      expect(
        await Promise.all([stop("r3", "SIGTERM"), stop("r4", "SIGTERM"), stop("r5", "SIGTERM")]),
      ).toEqual([0, 0, 0]);
      await until(() => converged(["r1", "r2"]), 150_000, "2 replicas to share the objects");
      // A crash: r2's objects wait for its Lease to expire, then move to r1 and the new r6.
      start("r6");
      await until(() => statusOf("r6") !== undefined, 60_000, "r6 to start");
      await stop("r2", "SIGKILL");
      await until(() => converged(["r1", "r6"]), 150_000, "r1 and r6 to take over r2's objects");
    } finally {
      await stopChurn();
    }
    await until(() => converged(["r1", "r6"]), 60_000, "the last updates to be reconciled");
    const { overlaps, lastSeen, byReplica } = audit();
    expect(overlaps).toEqual([]);
    for (const [name, v] of written) expect(lastSeen.get(`${NS}/${name}`), name).toBe(v);
    expect(byReplica.get("r6")).toBeGreaterThan(0);
    const leases = await client.list(Lease, { namespace: NS, labelSelector: `${RING_LABEL}=${RING}` });
    const holders = new Map(leases.items.map((l) => [l.metadata?.name, l.spec?.holderIdentity ?? ""]));
    expect(holders.get("r1")).toBe("r1");
    expect(holders.get("r6")).toBe("r6");
    // Released on SIGTERM, fenced by the sharder after the SIGKILL (or deleted once orphaned).
    for (const id of ["r2", "r3", "r4", "r5"]) expect(holders.get(id) ?? "", id).not.toBe(id);
  }, 480_000);
});
