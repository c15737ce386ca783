import { dependents, type KubeObject, readiness } from "kubeloop";
import type { Desired } from "kubeloop/controller";
import {
  type apps,
  ConfigMap,
  type core,
  Job,
  PersistentVolumeClaim,
  Secret,
  Service,
  StatefulSet,
} from "kubeloop/k8s";
import { restoreStep } from "./backup.ts";
import {
  connectionConfigMap,
  credentialsSecret,
  headlessService,
  initJob,
  labels,
  meta,
  names,
  podLabels,
  roleService,
  type SampleDBObject,
  statefulSet,
} from "./objects.ts";
import { reloadHash, reloadJob, restartArguments } from "./parameters.ts";
import { SampleDB } from "./resources.ts";

// A SampleDB's children in the order they need each other: the credentials and the connection
// ConfigMap, the Services, a data volume per instance; the StatefulSet, which counts as ready
// once its primary serves; then the initialisation Job, and the reload Job when the reloadable
// settings changed. The framework applies them in that order, stops at the first that is not
// ready, and deletes what it made and no longer wants (the read-only Service below 2 instances,
// the volumes of removed instances as deletionPolicy says). Pods (roles, failover) and the
// backups (Jobs made when due, the volume that outlives the SampleDB) stay in the reconcile.

/** The objects.ts functions' k8s types leave apiVersion and kind optional; they always set them. */
const typed = <U extends KubeObject>(object: U) => object as Desired<U>;

/** What a pass computed before its children: what the desired functions cannot read from the SampleDB. */
export interface Pass {
  /** The credentials (read back from the Secret once made: initdb used the first ones). */
  passwords: { app: string; superuser: string };
  /** The instance named primary, after this pass's election. */
  primary: string;
  primaryReady: boolean;
  /** The StatefulSet as it is: its podManagementPolicy cannot change. */
  statefulSet: apps.StatefulSet | undefined;
  /** The initialisation Job still exists (it is never made again once the database is initialised). */
  initJobExists: boolean;
}

/** Instance `ordinal`'s data volume, as the StatefulSet names and labels it (it uses the existing one). */
export function dataVolume(db: SampleDBObject, ordinal: number): core.PersistentVolumeClaim {
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      ...meta(db, `data-${names(db).name}-${ordinal}`),
      labels: { ...labels(db), ...podLabels(db, "instance") },
    },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: db.spec.storage } } },
  };
}

export const sampleDBChildren = dependents<SampleDBObject, Pass>(SampleDB, { condition: false, poll: "2s" })
  .child("credentials", Secret, (db, _, pass) => typed(credentialsSecret(db, pass.passwords)))
  .child("connection", ConfigMap, (db, _, pass) => typed(connectionConfigMap(db, pass.primary)))
  .child("pods-service", Service, (db) => typed(headlessService(db)))
  .child("primary-service", Service, (db) => typed(roleService(db, "primary")))
  .child("replica-service", Service, (db) => typed(roleService(db, "replica")), {
    when: (db) => db.spec.instances > 1,
  })
  // A removed instance's volume: deleted under Delete and Snapshot (a standby's data is a copy of
  // the primary's); under Retain kept, out of the set and without the owner reference.
  .children(
    "volumes",
    PersistentVolumeClaim,
    (db) => Array.from({ length: db.spec.instances }, (_, ordinal) => typed(dataVolume(db, ordinal))),
    { unwanted: (_, db) => (db.spec.deletionPolicy === "Retain" ? "orphan" : "delete") },
  )
  .child(
    "statefulset",
    StatefulSet,
    (db, _, pass) => typed(statefulSet(db, restartArguments(db), pass.statefulSet)),
    {
      dependsOn: ["credentials", "connection", "pods-service", "volumes"],
      ready: (_, { inputs }) => inputs.primaryReady || `the primary ${inputs.primary} is not ready`,
    },
  )
  .child("init", Job, (db) => typed(initJob(db, restoreStep(db))), {
    dependsOn: ["statefulset"],
    // Once the database is initialised, a deleted init Job is not run again (a restore would
    // overwrite the data); one that exists stays, and goes with the SampleDB.
    when: (db, pass) => !db.status?.initialized || pass.initJobExists,
    createOnly: true,
    ready: readiness.job,
  })
  .child("reload", Job, (db) => typed(reloadJob(db)), {
    dependsOn: ["statefulset", "init"],
    when: (db) => db.status?.parametersApplied !== reloadHash(db),
    createOnly: true,
    ready: readiness.job,
  });
