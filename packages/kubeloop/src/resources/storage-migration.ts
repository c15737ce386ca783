import type { Client } from "../client/index.js";
import { Conflict, Gone, type KubeObject, NotFound, refTo, resourceType } from "../client/index.js";
import { type apiextensions_v1, CustomResourceDefinition } from "../k8s/index.js";

/**
 * Retiring a CRD version, the four steps the Kubernetes docs give ("upgrade existing objects to a
 * new stored version"), done safely while the operator and users keep writing:
 *
 * 1. every stored object is rewritten in the current storage version: a no-op merge patch that
 *    carries the object's `uid` (a deleted and re-created object is never touched by mistake) and
 *    `resourceVersion` (a concurrent write is a 409 Conflict: we re-read and write again; an
 *    object deleted meanwhile is skipped). The API server re-encodes the object on any write, so
 *    this moves it to the storage version; it changes no field. Pages of 500, like client-go's pager;
 *    an expired `continue` token starts the list again (rewriting twice is harmless);
 * 2. `status.storedVersions` becomes `[storageVersion]`, with optimistic locking, and only if the
 *    CRD's `metadata.generation` did not change during step 1 (a new storage version set meanwhile
 *    would mean objects written in a version we did not migrate to): the in-tree migrator's rule;
 * 3. each version to retire gets `served: false`; a version still in `storedVersions` is refused,
 *    because objects may still be stored in it.
 *
 * Rerunning is safe and cheap, which is what makes it resumable: an object already in the storage
 * version is rewritten byte-identical, and the API server skips identical writes. `continue` resumes
 * a run from its last page on the same day (list tokens live ~5 minutes).
 *
 * Why not the API server's StorageVersionMigration (`storagemigration.k8s.io`): it is beta and off
 * by default in 1.35 and 1.36 (a kube-controller-manager feature gate and an API group to enable),
 * so most clusters cannot run it; it does the same no-op writes; and it neither refuses to retire a
 * version nor sets `served: false`. Where it is enabled it could do step 1; see
 * docs/design/storage-version-migration.md.
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 * import { migrateStorageVersion } from "kubeloop/resources";
 *
 * const client = await Client.connect();
 * const result = await migrateStorageVersion(client, "myapps.apps.example.com", { retire: ["v1alpha1"] });
 * // result.rewritten objects are now stored as result.storageVersion; v1alpha1 is no longer served.
 * ```
 */

export interface MigrateStorageOptions {
  /** Versions to stop serving once no object is stored in them. */
  retire?: string[];
  /** Objects per list page. Default {@link DEFAULT_MIGRATION_PAGE_SIZE}. */
  pageSize?: number;
  /** Rewrites in flight at once. Default {@link DEFAULT_MIGRATION_CONCURRENCY}. */
  concurrency?: number;
  /** A `continue` token from {@link MigrationProgress}, to resume a run that stopped. */
  continue?: string;
  /** Told after each page, and awaited: a caller may persist `continue` to resume after a crash. */
  onProgress?: (progress: MigrationProgress) => void | Promise<void>;
  signal?: AbortSignal;
}

/** Where a storage migration stands after a page: objects rewritten and skipped, and the next page. */
export interface MigrationProgress {
  rewritten: number;
  /** Objects deleted between the list and their rewrite. */
  skipped: number;
  /** Where the next page starts; undefined after the last page. */
  continue: string | undefined;
}

/** What a finished storage migration did, and to which CRD and storage version. */
export interface MigrationResult {
  crd: string;
  storageVersion: string;
  rewritten: number;
  skipped: number;
  /** Conflicts with concurrent writers, each resolved by a re-read. */
  conflicts: number;
  /** `status.storedVersions` before and after. */
  storedVersionsBefore: string[];
  storedVersions: string[];
  /** Versions now `served: false` (retired by this run). */
  unserved: string[];
}

/** A migration that cannot go ahead; nothing was changed unless the message says so. */
export class StorageMigrationError extends Error {
  override readonly name = "StorageMigrationError";
}

/** client-go's pager page size. */
export const DEFAULT_MIGRATION_PAGE_SIZE = 500;
/**
 * Against a remote cluster each rewrite is a network round trip: a few in flight hide that
 * latency, while API Priority and Fairness still bounds what a migration takes from other
 * clients. On the loaded 2-core test machine, with the API server on the same cores, 1 and 8 made
 * no measurable difference (55–122 objects/s either way, 1,000 objects): its CPU is the limit there.
 */
export const DEFAULT_MIGRATION_CONCURRENCY = 8;
/** Re-reads per object when concurrent writers keep winning; five is client-go's DefaultRetry. */
const REWRITE_ATTEMPTS = 5;

/** The generated CustomResourceDefinition type (k8s/), the one CRD shape of the library. */
type Crd = apiextensions_v1.CustomResourceDefinition;
const CRD = CustomResourceDefinition;

/** Rewrites every object of a CRD in its storage version, trims storedVersions, retires versions. */
export async function migrateStorageVersion(
  client: Client,
  crdName: string,
  options: MigrateStorageOptions = {},
): Promise<MigrationResult> {
  const crd = await getCrd(client, crdName);
  const storage = storageVersionOf(crd);
  const retire = options.retire ?? [];
  for (const version of retire) checkRetirable(crd, version, storage);
  const generation = crd.metadata?.generation;
  const storedVersionsBefore = crd.status?.storedVersions ?? [];

  const type = resourceType(`${crd.spec.group}/${storage}`, crd.spec.names.kind, {
    plural: crd.spec.names.plural,
    namespaced: crd.spec.scope === "Namespaced",
  });
  const counts = { rewritten: 0, skipped: 0, conflicts: 0 };
  let token = options.continue;
  do {
    options.signal?.throwIfAborted();
    let page: Awaited<ReturnType<typeof client.listMetadata>>;
    try {
      page = await client.listMetadata(type, {
        limit: options.pageSize ?? DEFAULT_MIGRATION_PAGE_SIZE,
        ...(token ? { continue: token } : {}),
      });
    } catch (error) {
      // The token expired (etcd compacted past it): start over; rewritten objects rewrite as no-ops.
      if (error instanceof Gone && token) {
        token = undefined;
        continue;
      }
      throw error;
    }
    const items = [...page.items];
    const worker = async () => {
      for (let item = items.shift(); item; item = items.shift()) {
        const outcome = await rewrite(client, type, item);
        if (outcome.rewritten) counts.rewritten++;
        else counts.skipped++;
        counts.conflicts += outcome.conflicts;
      }
    };
    const workers = Math.max(1, Math.min(options.concurrency ?? DEFAULT_MIGRATION_CONCURRENCY, items.length));
    await Promise.all(Array.from({ length: workers }, worker));
    token = page.metadata.continue || undefined;
    await options.onProgress?.({ rewritten: counts.rewritten, skipped: counts.skipped, continue: token });
  } while (token);

  const storedVersions = await trimStoredVersions(client, crdName, storage, generation);
  const unserved: string[] = [];
  for (const version of retire) {
    await retireVersion(client, crdName, version);
    unserved.push(version);
  }
  return { crd: crdName, storageVersion: storage, ...counts, storedVersionsBefore, storedVersions, unserved };
}

/**
 * Sets `served: false` on a version. Refuses a version that does not exist, the storage version,
 * and a version still listed in `status.storedVersions` (objects may be stored in it: run
 * {@link migrateStorageVersion} first).
 */
export async function retireVersion(client: Client, crdName: string, version: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const crd = await getCrd(client, crdName);
    checkRetirable(crd, version, storageVersionOf(crd));
    if (crd.status?.storedVersions?.includes(version))
      throw new StorageMigrationError(
        `${crdName}: ${version} is still in status.storedVersions (${crd.status.storedVersions.join(", ")}), so objects may be stored in it; ` +
          `migrate them first (\`kubeloop migrate ${crdName}\`), then retire it`,
      );
    const current = crd.spec.versions.find((v) => v.name === version);
    if (!current?.served) return;
    const versions = crd.spec.versions.map((v) => (v.name === version ? { ...v, served: false } : v));
    try {
      await client.update({ ...crd, spec: { ...crd.spec, versions } });
      return;
    } catch (error) {
      if (!(error instanceof Conflict) || attempt >= REWRITE_ATTEMPTS) throw error;
    }
  }
}

async function getCrd(client: Client, name: string): Promise<Crd> {
  try {
    return await client.get(refTo(CRD, name));
  } catch (error) {
    if (error instanceof NotFound)
      throw new StorageMigrationError(
        `CustomResourceDefinition ${name} not found; give its full name, <plural>.<group> (kubectl get crd lists them)`,
      );
    throw error;
  }
}

function storageVersionOf(crd: Crd): string {
  const storage = crd.spec.versions.find((v) => v.storage);
  if (!storage) throw new StorageMigrationError(`${crd.metadata?.name} has no storage version`);
  return storage.name;
}

function checkRetirable(crd: Crd, version: string, storage: string): void {
  const names = crd.spec.versions.map((v) => v.name);
  if (!names.includes(version))
    throw new StorageMigrationError(
      `${crd.metadata?.name} has no version "${version}"; its versions are ${names.join(", ")}. Nothing was changed.`,
    );
  if (version === storage)
    throw new StorageMigrationError(
      `${crd.metadata?.name}: ${version} is the storage version; make another version the storage version (and deploy it) before retiring ${version}. Nothing was changed.`,
    );
}

/** One object's no-op write; re-read on conflict, skipped once deleted. */
async function rewrite(
  client: Client,
  type: ReturnType<typeof resourceType>,
  item: KubeObject,
): Promise<{ rewritten: boolean; conflicts: number }> {
  const name = item.metadata?.name ?? "";
  const namespace = item.metadata?.namespace;
  let meta = item.metadata;
  for (let conflicts = 0; ; conflicts++) {
    try {
      await client.patch(
        type,
        name,
        { metadata: { uid: meta?.uid, resourceVersion: meta?.resourceVersion } },
        namespace ? { namespace } : {},
      );
      return { rewritten: true, conflicts };
    } catch (error) {
      if (error instanceof NotFound) return { rewritten: false, conflicts };
      if (!(error instanceof Conflict) || conflicts + 1 >= REWRITE_ATTEMPTS) throw error;
    }
    try {
      meta = (await client.get(type, name, namespace ? { namespace } : {})).metadata;
    } catch (error) {
      if (error instanceof NotFound) return { rewritten: false, conflicts: conflicts + 1 };
      throw error;
    }
  }
}

async function trimStoredVersions(
  client: Client,
  crdName: string,
  storage: string,
  generation: number | undefined,
): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    const crd = await getCrd(client, crdName);
    if (crd.metadata?.generation !== generation)
      throw new StorageMigrationError(
        `${crdName} changed during the migration (generation ${generation} → ${crd.metadata?.generation}): ` +
          "its storage version may have changed, so some objects may be stored in another version. " +
          "Every object was rewritten, status.storedVersions was left as it was; run the migration again.",
      );
    const stored = crd.status?.storedVersions ?? [];
    if (stored.length === 1 && stored[0] === storage) return stored;
    try {
      const updated = await client.updateStatus({
        ...crd,
        status: { ...crd.status, storedVersions: [storage] },
      });
      return (updated as Crd).status?.storedVersions ?? [storage];
    } catch (error) {
      if (!(error instanceof Conflict) || attempt >= REWRITE_ATTEMPTS) throw error;
    }
  }
}
