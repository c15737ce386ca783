import type { batch, core } from "kubeloop/k8s";
import { meta, names, oneShotJob, type SampleDBObject, volumeOwner } from "./objects.ts";

// Backups as the seed describes them: pods the operator starts when one is due, which connect to
// the database with the credentials Secret and write into a backup volume of their own.

/** Where backup pods mount the backup volume. */
const BACKUPS = "/backups";

/** `30s`, `15m`, `24h` → milliseconds. */
export function intervalMs(schedule: string): number {
  const match = /^(\d+)(s|m|h)$/.exec(schedule);
  if (!match) throw new Error(`backup schedule ${JSON.stringify(schedule)} is not a number of s, m or h`);
  return Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as "s" | "m" | "h"];
}

/** A backup's file: its time, sortable (`20261126T051500Z.dump`). */
export function backupFile(at: Date): string {
  return `${at
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")}.dump`;
}

/** The backup volume: not owned by the SampleDB, so backups outlive it (restore, Snapshot). */
export function backupVolume(db: SampleDBObject): core.PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: meta(db, names(db).backups),
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: db.spec.backup?.storage ?? "1Gi" } },
    },
  };
}

/**
 * A Job that dumps the database into `file` (written as `.partial`, renamed when complete: a pod
 * killed mid-way leaves no half backup), then keeps the newest `retention` backups.
 */
export function backupJob(db: SampleDBObject, jobName: string, file: string): batch.Job {
  const { rw, backups } = names(db);
  const retention = db.spec.backup?.retention ?? 7;
  const script = `pg_dump -h ${rw} -U postgres -d "${db.spec.database}" -Fc -f "${BACKUPS}/${file}.partial"
mv "${BACKUPS}/${file}.partial" "${BACKUPS}/${file}"
rm -f ${BACKUPS}/*.partial
ls -1 ${BACKUPS} | grep '[.]dump$' | sort -r | tail -n +${retention + 1} | while read -r old; do rm -f "${BACKUPS}/$old"; done
ls -1 ${BACKUPS}`;
  return oneShotJob(db, {
    name: jobName,
    component: "backup",
    script,
    backoffLimit: 3,
    // Finished backup Jobs go after a day; the backups themselves stay in the volume.
    ttlSeconds: 86_400,
    annotations: { "seed.example.com/backup-file": file },
    initContainers: [volumeOwner(db.spec.image, "backups", BACKUPS)],
    volumes: [{ name: "backups", persistentVolumeClaim: { claimName: backups } }],
    mounts: [{ name: "backups", mountPath: BACKUPS }],
  });
}

/** What the init Job adds for `spec.restore`: pg_restore of the chosen (or latest) backup of another SampleDB. */
export function restoreStep(
  db: SampleDBObject,
): { script: string; volume: core.Volume; mount: core.VolumeMount } | undefined {
  const restore = db.spec.restore;
  if (!restore) return undefined;
  const file = restore.backup
    ? `"/restore/${restore.backup}"`
    : `"/restore/$(ls -1 /restore | grep '[.]dump$' | sort | tail -n 1)"`;
  // --clean --if-exists: a retried Job restores over what a failed attempt left.
  const script = `file=${file}
[ -f "$file" ] || { echo "no backup $file of ${restore.from}" >&2; exit 1; }
pg_restore -h ${names(db).rw} -U postgres -d "${db.spec.database}" --clean --if-exists --no-owner --role="${db.spec.database}" "$file"`;
  return {
    script,
    volume: {
      name: "restore",
      persistentVolumeClaim: { claimName: `${restore.from}-backups`, readOnly: true },
    },
    mount: { name: "restore", mountPath: "/restore", readOnly: true },
  };
}
