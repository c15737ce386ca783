import { ControlPlaneError } from "../errors.js";

/**
 * Compacts etcd's history up to now, through etcd's JSON gateway at `etcdUrl`, so watches and lists
 * from an older resourceVersion get 410 Gone. Returns the compacted revision.
 */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const post = async (path: string, body: object) => {
    const response = await fetch(`${etcdUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
    if (!response.ok)
      throw new ControlPlaneError(`etcd ${path} failed: HTTP ${response.status} ${await response.text()}`);
    return (await response.json()) as { header?: { revision?: string } };
  };
  const revision = Number(
    (await post("/v3/kv/range", { key: Buffer.from("/").toString("base64") })).header?.revision,
  );
  await post("/v3/kv/compaction", { revision: String(revision), physical: true });
  return revision;
}
