import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

/** The PostgreSQL image made by kubeloop/testing from Debian 12's postgresql-15 (`loadBaseImage("postgres")`). */
export const DEFAULT_IMAGE = "kubeloop.local/postgres:15";

const spec = Type.Object(
  {
    instances: Type.Integer({
      minimum: 1,
      maximum: 5,
      default: 1,
      description: "PostgreSQL instances: one primary and instances - 1 streaming replicas.",
    }),
    image: Type.String({
      default: DEFAULT_IMAGE,
      minLength: 1,
      description:
        "The PostgreSQL image: initdb, postgres, pg_basebackup, pg_isready, psql and sh on PATH, run as a non-root user.",
    }),
    storage: Type.String({
      default: "1Gi",
      pattern: "^[0-9]+(Ki|Mi|Gi|Ti)$",
      description: "The size of each instance's data volume (a PersistentVolumeClaim).",
    }),
    database: Type.String({
      default: "app",
      pattern: "^[a-z_][a-z0-9_]{0,62}$",
      description: "The application's database, owned by the application's role of the same name.",
    }),
    extensions: Type.Array(Type.String({ pattern: "^[a-z_][a-z0-9_]{0,62}$" }), {
      default: [],
      description: "Extensions the initialisation Job creates in the database (e.g. pgcrypto).",
    }),
    parameters: Type.Record(Type.String(), Type.String(), {
      default: {},
      description:
        "PostgreSQL settings (postgresql.conf names). Those the server reads only at start (max_connections, shared_buffers, wal_level, ...) roll the instances, replicas first; the rest are applied with ALTER SYSTEM and a reload, without a restart. Names that are not setting names are ignored, with a Warning event.",
    }),
    replication: Type.Object(
      {
        mode: Type.Union([Type.Literal("synchronous"), Type.Literal("asynchronous")], {
          default: "synchronous",
          description:
            "synchronous: a commit returns once `number` standbys have it (synchronous_standby_names `ANY n (...)`, set by the operator on the primary); asynchronous: at once, and a failover can lose the last commits.",
        }),
        number: Type.Integer({
          minimum: 1,
          default: 1,
          description: "Standbys that must confirm each commit (at most instances - 1 count).",
        }),
        durability: Type.Union([Type.Literal("preferred"), Type.Literal("required")], {
          default: "preferred",
          description:
            "required: with fewer than `number` standbys streaming, commits wait (writes stop) until enough are back; preferred: the primary waits only for the standbys that are Ready and streaming, none when none is (writes go on, as with asynchronous replication, until a standby is back).",
        }),
      },
      {
        default: {},
        description:
          "How commits reach the standbys. The default, synchronous and preferred with 1 standby: no acknowledged commit is lost when the primary's machine is, while a standby streams; writes go on when the standbys are lost.",
      },
    ),
    backup: Type.Optional(
      Type.Object(
        {
          schedule: Type.String({
            pattern: "^[0-9]+(s|m|h)$",
            default: "24h",
            description: "How often a backup Job runs (`30s`, `15m`, `24h`).",
          }),
          retention: Type.Integer({
            minimum: 1,
            default: 7,
            description: "Backups kept; older ones are removed.",
          }),
          storage: Type.String({
            default: "1Gi",
            pattern: "^[0-9]+(Ki|Mi|Gi|Ti)$",
            description: "The size of the backup volume (`<name>-backups`), which outlives the SampleDB.",
          }),
        },
        { description: "Scheduled backups: pg_dump of the database into the backup volume, by Jobs." },
      ),
    ),
    restore: Type.Optional(
      Type.Object(
        {
          from: Type.String({
            minLength: 1,
            description: "The SampleDB (in this namespace) whose backups to use.",
          }),
          parameters: Type.Record(Type.String(), Type.String(), {
            default: {},
            description:
              "PostgreSQL settings (postgresql.conf names). Those the server reads only at start (max_connections, shared_buffers, wal_level, ...) roll the instances, replicas first; the rest are applied with ALTER SYSTEM and a reload, without a restart. Names that are not setting names are ignored, with a Warning event.",
          }),
          backup: Type.Optional(
            Type.String({
              pattern: "^[0-9TZ]+[.]dump$",
              description: "The backup file; default the latest.",
            }),
          ),
        },
        { description: "Starts the database from a backup of another SampleDB, by the initialisation Job." },
      ),
    ),
    deletionPolicy: Type.Union([Type.Literal("Snapshot"), Type.Literal("Delete"), Type.Literal("Retain")], {
      default: "Snapshot",
      description:
        "On deletion: Snapshot takes a final backup, then removes the StatefulSet and the data volumes (backups stay); Delete removes everything, backups included; Retain removes the StatefulSet and keeps the volumes. On a scale-down, the removed instances' data volumes are deleted (Snapshot, Delete: a standby's data is a copy of the primary's) or kept (Retain).",
    }),
  },
  { description: "The desired database." },
);

const status = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration()),
    phase: Type.Optional(
      Type.Union(
        [
          Type.Literal("Creating"),
          Type.Literal("Initializing"),
          Type.Literal("Ready"),
          Type.Literal("Degraded"),
          Type.Literal("Deleting"),
        ],
        { description: "Where the database is in its life." },
      ),
    ),
    primary: Type.Optional(Type.String({ description: "The pod that takes writes." })),
    promotedAt: Type.Optional(
      Type.String({ description: "When the operator last named a new primary (RFC 3339)." }),
    ),
    readyInstances: Type.Optional(Type.Integer({ description: "Instances running and ready." })),
    ready: Type.Optional(Type.String({ description: "Ready instances of the desired ones, as `2/3`." })),
    version: Type.Optional(Type.String({ description: "The PostgreSQL major version the data is in." })),
    lastBackup: Type.Optional(Type.String({ description: "When the last backup completed (RFC 3339)." })),
    parametersApplied: Type.Optional(
      Type.String({ description: "The hash of the reloadable parameters the instances run with." }),
    ),
    lastBackupFile: Type.Optional(
      Type.String({ description: "The last backup's file in the backup volume." }),
    ),
    replication: Type.Optional(
      Type.Object(
        {
          synchronousStandbyNames: Type.String({
            description: "What the primary runs with (empty: commits wait for no standby).",
          }),
          streaming: Type.Array(Type.String(), { description: "The standbys streaming from the primary." }),
          writes: Type.Union(
            [
              Type.Literal("Synchronous"),
              Type.Literal("Asynchronous"),
              Type.Literal("Degraded"),
              Type.Literal("Waiting"),
            ],
            {
              description:
                "Synchronous: each commit waits for enough standbys; Degraded (preferred): for fewer, or none; Waiting (required): commits wait until enough standbys stream.",
            },
          ),
        },
        { description: "Synchronous replication as the operator set it on the primary." },
      ),
    ),
    initialized: Type.Optional(
      Type.Boolean({ description: "The initialisation Job (role, database, extensions) completed." }),
    ),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The observed state, written by the operator." },
);

/**
 * SampleDB, the operator of Kubernetes' documentation (seed 002): PostgreSQL in a StatefulSet whose
 * volumes are PersistentVolumeClaims, a Job for its initial configuration, a Service apps find it by,
 * and a Secret and a ConfigMap with the connection's credentials and details.
 *
 * @example
 * ```yaml
 * apiVersion: seed.example.com/v1
 * kind: SampleDB
 * metadata: { name: shop }
 * spec: { instances: 3, storage: 1Gi, database: shop, extensions: [pgcrypto] }
 * ```
 */
export const SampleDB = defineResource({
  group: "seed.example.com",
  version: "v1",
  kind: "SampleDB",
  shortNames: ["sdb"],
  categories: ["all"],
  description: "A PostgreSQL database run in the cluster: a primary, streaming replicas, a Service.",
  spec,
  status,
  printerColumns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Primary", type: "string", jsonPath: ".status.primary" },
    { name: "Ready", type: "string", jsonPath: ".status.ready" },
    { name: "Version", type: "string", jsonPath: ".status.version" },
    { name: "Last Backup", type: "date", jsonPath: ".status.lastBackup", priority: 1 },
  ],
});
