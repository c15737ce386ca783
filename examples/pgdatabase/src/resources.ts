import type { ObjectOf } from "kubeloop";
import { Conditions, defineResource, ObservedGeneration } from "kubeloop/resources";
import Type from "typebox";

/** PostgreSQL identifiers: letters, digits and `_`, starting with a letter or `_`, at most 63 bytes. */
const IDENTIFIER = "^[a-z_][a-z0-9_]{0,62}$";
const immutable = (what: string) => [{ rule: "self == oldSelf", message: `${what} is immutable` }];

const serverRef = Type.Object(
  {
    secretName: Type.String({
      minLength: 1,
      description:
        "A Secret in the PgDatabase's namespace with the server's address and an admin role: keys host, port, username, password.",
    }),
  },
  { description: "The PostgreSQL server the database lives on." },
);

const backupSpec = Type.Object(
  {
    schedule: Type.Optional(
      Type.String({
        minLength: 9,
        description: 'When to back up, in 5-field cron (UTC), e.g. "0 3 * * *" for 03:00 every day.',
      }),
    ),
    keep: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 7,
      description: "How many scheduled backups to keep; older ones are deleted (with their files).",
    }),
    verifySchedule: Type.Optional(
      Type.String({
        minLength: 9,
        description:
          "When to verify the latest backup by restoring it into a scratch database (5-field cron).",
      }),
    ),
  },
  { description: "Scheduled backups." },
);

const connectionLimitSpec = Type.Object(
  {
    min: Type.Integer({ minimum: 1, description: "The least the limit may be lowered to." }),
    max: Type.Integer({ minimum: 1, description: "The most the limit may be raised to." }),
    headroom: Type.Number({
      minimum: 1,
      maximum: 10,
      default: 1.5,
      description: "The limit is the observed peak of connections times this, within [min, max].",
    }),
  },
  { description: "Let the operator set the connection limit from the observed peak, within bounds." },
);

export const PgDatabaseSpec = Type.Object(
  {
    server: serverRef,
    databaseName: Type.Optional(
      Type.String({
        pattern: IDENTIFIER,
        description:
          "The database's name on the server. Default: the object's name with '-' as '_'. Immutable.",
        "x-kubernetes-validations": immutable("databaseName"),
      }),
    ),
    owner: Type.Optional(
      Type.String({
        pattern: IDENTIFIER,
        description: "The role that owns the database; the app logs in as it. Default: <databaseName>_owner.",
      }),
    ),
    extensions: Type.Optional(
      Type.Array(Type.String({ pattern: IDENTIFIER }), {
        description: "Extensions to create in the database (e.g. pgcrypto, hstore).",
        "x-kubernetes-list-type": "set",
      }),
    ),
    connectionLimit: Type.Integer({
      minimum: -1,
      default: -1,
      description: "The most concurrent connections to the database; -1: no limit.",
    }),
    autoConnectionLimit: Type.Optional(connectionLimitSpec),
    passwordRotation: Type.Optional(
      Type.String({
        description:
          "Change this (e.g. to the current time) to rotate the owner's password: the role and the Secret are updated together.",
      }),
    ),
    backup: Type.Optional(backupSpec),
    restoreFrom: Type.Optional(
      Type.Object(
        {
          backup: Type.String({
            minLength: 1,
            description: "A completed PgDatabaseBackup in this namespace.",
          }),
        },
        {
          description: "Start the new database from a backup (only when it is created).",
          "x-kubernetes-validations": immutable("restoreFrom"),
        },
      ),
    ),
    deletionPolicy: Type.Union([Type.Literal("Snapshot"), Type.Literal("Delete"), Type.Literal("Retain")], {
      default: "Snapshot",
      description:
        "What deleting the PgDatabase does: Snapshot takes a final backup, then drops the database; Delete drops it; Retain leaves it on the server.",
    }),
  },
  { description: "The database the operator keeps on the server, and how it is backed up and deleted." },
);

const lastBackup = Type.Object(
  {
    name: Type.String({ description: "The PgDatabaseBackup." }),
    completedAt: Type.String({ format: "date-time", description: "When its dump completed." }),
    sizeBytes: Type.Optional(Type.Integer({ format: "int64", description: "The dump file's size." })),
    durationSeconds: Type.Optional(Type.Number({ description: "How long the dump took." })),
  },
  { description: "The latest completed backup: what a recovery restores from." },
);

export const PgDatabaseStatus = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration()),
    phase: Type.Optional(
      Type.String({ description: "Pending, Creating, Restoring, Ready, Failed, Deleting, Recovering." }),
    ),
    databaseName: Type.Optional(Type.String({ description: "The database this object manages." })),
    owner: Type.Optional(Type.String({ description: "The role that owns it." })),
    credentialsSecret: Type.Optional(
      Type.String({
        description: "The Secret the app connects with (host, port, database, username, password, uri).",
      }),
    ),
    created: Type.Optional(
      Type.Boolean({
        description:
          "True once this object created the database (or its restore finished). Only then may deletion drop it.",
      }),
    ),
    restore: Type.Optional(
      Type.Object(
        {
          backup: Type.String({ description: "The PgDatabaseBackup being restored." }),
          phase: Type.String({ description: "Running or Completed." }),
          reason: Type.Optional(
            Type.String({ description: "Requested (restoreFrom) or Recovery (dropped out of band)." }),
          ),
          startedAt: Type.Optional(
            Type.String({ format: "date-time", description: "When the restore began." }),
          ),
        },
        { description: "A restore in progress or done: a restarted operator resumes it from here." },
      ),
    ),
    passwordRotation: Type.Optional(Type.String({ description: "The last spec.passwordRotation applied." })),
    sizeBytes: Type.Optional(Type.Integer({ format: "int64", description: "The database's size on disk." })),
    connections: Type.Optional(Type.Integer({ description: "Connections open at the last look." })),
    peakConnections: Type.Optional(
      Type.Integer({ description: "The most connections seen open in the current window (an hour)." }),
    ),
    peakWindowStart: Type.Optional(
      Type.String({ format: "date-time", description: "When that window began." }),
    ),
    connectionLimit: Type.Optional(Type.Integer({ description: "The connection limit in force." })),
    extensions: Type.Optional(Type.Array(Type.String(), { description: "Extensions installed." })),
    lastBackup: Type.Optional(lastBackup),
    lastScheduledBackup: Type.Optional(
      Type.String({ format: "date-time", description: "The schedule slot of the last scheduled backup." }),
    ),
    lastVerification: Type.Optional(
      Type.Object(
        {
          backup: Type.String({ description: "The PgDatabaseBackup restored into a scratch database." }),
          slot: Type.String({ format: "date-time", description: "The verification schedule's slot." }),
          result: Type.String({ description: "Passed or Failed." }),
          message: Type.Optional(Type.String({ description: "Why it failed." })),
        },
        { description: "The latest scheduled verification of a backup." },
      ),
    ),
    deletion: Type.Optional(
      Type.Object(
        {
          step: Type.String({ description: "Snapshot, Drop or Done." }),
          backup: Type.Optional(Type.String({ description: "The final backup (Snapshot policy)." })),
        },
        { description: "Where a deletion stands: a restarted operator goes on from this step." },
      ),
    ),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The observed state, written by the operator." },
);

/**
 * A database on a PostgreSQL server: the database, an owner role with a generated password, the
 * credentials Secret the app connects with, scheduled backups, restore, and a deletion policy.
 */
export const PgDatabase = defineResource({
  group: "db.example.com",
  version: "v1alpha1",
  kind: "PgDatabase",
  plural: "pgdatabases",
  shortNames: ["sdb"],
  categories: ["all"],
  description: "A database on a PostgreSQL server, with its owner role, credentials, backups and restore.",
  spec: PgDatabaseSpec,
  status: PgDatabaseStatus,
  printerColumns: [
    { name: "Database", type: "string", jsonPath: ".status.databaseName" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: "Size", type: "integer", jsonPath: ".status.sizeBytes", priority: 1 },
    { name: "Last Backup", type: "date", jsonPath: ".status.lastBackup.completedAt" },
  ],
});

export const PgDatabaseBackupSpec = Type.Object(
  {
    database: Type.String({
      minLength: 1,
      description: "The PgDatabase to back up (in this namespace).",
      "x-kubernetes-validations": immutable("database"),
    }),
  },
  { description: "The PgDatabase this backup is of." },
);

export const PgDatabaseBackupStatus = Type.Object(
  {
    observedGeneration: Type.Optional(ObservedGeneration()),
    phase: Type.Optional(Type.String({ description: "Pending, Running, Completed or Failed." })),
    path: Type.Optional(
      Type.String({ description: "The file in the backup store (pg_dump custom format)." }),
    ),
    databaseName: Type.Optional(Type.String({ description: "The database that was dumped." })),
    sizeBytes: Type.Optional(Type.Integer({ format: "int64", description: "The file's size." })),
    sha256: Type.Optional(Type.String({ description: "The file's SHA-256, checked before every restore." })),
    durationSeconds: Type.Optional(Type.Number({ description: "How long pg_dump took." })),
    postgresVersion: Type.Optional(
      Type.String({ description: "The server's version at the time of the dump." }),
    ),
    startedAt: Type.Optional(Type.String({ format: "date-time", description: "When the dump began." })),
    completedAt: Type.Optional(Type.String({ format: "date-time", description: "When the dump completed." })),
    attempts: Type.Optional(
      Type.Integer({ description: "Dumps started (a restarted operator starts again)." }),
    ),
    message: Type.Optional(Type.String({ description: "Why the backup failed." })),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The observed state, written by the operator." },
);

/** One backup of a PgDatabase: a pg_dump file in the backup store, with its checksum. */
export const PgDatabaseBackup = defineResource({
  group: "db.example.com",
  version: "v1alpha1",
  kind: "PgDatabaseBackup",
  plural: "pgdatabasebackups",
  shortNames: ["sdbb"],
  description: "One backup of a PgDatabase: a pg_dump (custom format) file in the operator's backup store.",
  spec: PgDatabaseBackupSpec,
  status: PgDatabaseBackupStatus,
  printerColumns: [
    { name: "Database", type: "string", jsonPath: ".spec.database" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Size", type: "integer", jsonPath: ".status.sizeBytes" },
    { name: "Duration", type: "number", jsonPath: ".status.durationSeconds" },
    { name: "Completed", type: "date", jsonPath: ".status.completedAt" },
  ],
});

export type PgDatabaseObject = ObjectOf<typeof PgDatabase>;
export type PgDatabaseBackupObject = ObjectOf<typeof PgDatabaseBackup>;
