import type { ObjectOf } from "kubeloop";
import type { apps, batch, core } from "kubeloop/k8s";
import type { SampleDB } from "./resources.ts";

// The objects a SampleDB is made of, as pure functions of it: the controller applies them.

export type SampleDBObject = ObjectOf<typeof SampleDB>;

export const OPERATOR_NAME = "sampledb-operator";
export const INSTANCE = "app.kubernetes.io/instance";
/** Set on each pod by the operator (not the StatefulSet): the Services select by it. */
export const ROLE = "seed.example.com/role";
const PORT = 5432;
/** Where the data volume is mounted; PGDATA is a folder in it (initdb wants an empty one it owns). */
const DATA = "/var/lib/postgresql/data";
const PGDATA = `${DATA}/pgdata`;
/** The image's non-root user (see node-images.ts). */
export const UID = 65532;

export const names = (db: SampleDBObject) => {
  const name = db.metadata?.name ?? "";
  return {
    name,
    namespace: db.metadata?.namespace ?? "",
    secret: `${name}-credentials`,
    config: `${name}-connection`,
    pods: `${name}-pods`,
    rw: `${name}-rw`,
    ro: `${name}-ro`,
    init: `${name}-init`,
    backups: `${name}-backups`,
  };
};

export function labels(db: SampleDBObject): Record<string, string> {
  return {
    "app.kubernetes.io/name": "sampledb",
    [INSTANCE]: names(db).name,
    "app.kubernetes.io/managed-by": OPERATOR_NAME,
  };
}

/** What a pod is for: a PostgreSQL instance, or one-shot work (Jobs) that must stay out of the Services. */
export const COMPONENT = "seed.example.com/component";

/** The labels of a SampleDB's pods of one component. */
export function podLabels(
  db: SampleDBObject,
  component: "instance" | "init" | "backup",
): Record<string, string> {
  return { ...labels(db), [COMPONENT]: component };
}

export function meta(db: SampleDBObject, name: string) {
  return { name, namespace: names(db).namespace, labels: labels(db) };
}

/** Credentials: the application's role and the superuser the operator's Jobs and replication use. */
export function credentialsSecret(
  db: SampleDBObject,
  passwords: { app: string; superuser: string },
): core.Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: meta(db, names(db).secret),
    type: "kubernetes.io/basic-auth",
    stringData: {
      username: db.spec.database,
      password: passwords.app,
      "superuser-username": "postgres",
      "superuser-password": passwords.superuser,
    },
  };
}

/** What an application needs besides the credentials, for apps that do not read the API. */
export function connectionConfigMap(db: SampleDBObject, primary: string): core.ConfigMap {
  const { namespace, rw, ro } = names(db);
  const host = `${rw}.${namespace}.svc.cluster.local`;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: meta(db, names(db).config),
    data: {
      host,
      readOnlyHost: db.spec.instances > 1 ? `${ro}.${namespace}.svc.cluster.local` : host,
      port: String(PORT),
      database: db.spec.database,
      username: db.spec.database,
      uri: `postgresql://${db.spec.database}@${host}:${PORT}/${db.spec.database}`,
      primary,
    },
  };
}

/** A Service for the pods with `role` (primary: read-write; replica: read-only). */
export function roleService(db: SampleDBObject, role: "primary" | "replica"): core.Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(db, role === "primary" ? names(db).rw : names(db).ro),
    spec: {
      selector: { ...podLabels(db, "instance"), [ROLE]: role },
      ports: [{ name: "postgres", port: PORT, targetPort: "postgres" }],
    },
  };
}

/** The StatefulSet's governing Service: stable DNS names for each pod, ready or not (replication). */
export function headlessService(db: SampleDBObject): core.Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(db, names(db).pods),
    spec: {
      clusterIP: "None",
      publishNotReadyAddresses: true,
      selector: podLabels(db, "instance"),
      ports: [{ name: "postgres", port: PORT, targetPort: "postgres" }],
    },
  };
}

/**
 * The primary is the one the operator names ($PRIMARY, from the connection ConfigMap, read when the
 * container starts). An empty volume: the primary runs initdb, the others copy it with
 * pg_basebackup and stream from it. A volume with data starts as it is (a replica keeps its
 * standby.signal), except a former primary after another was promoted: it is copied afresh (with
 * synchronous replication, what it had that the new primary lacks was never acknowledged; the copy
 * also drops the read-only setting it was fenced with). A standby names itself (application_name:
 * its pod) to the primary, whose synchronous_standby_names lists standbys by that name.
 */
const START = `set -e
PRIMARY_HOST="$PRIMARY.$PODS"
if [ -s "${PGDATA}/PG_VERSION" ] && [ "$PRIMARY" != "$POD_NAME" ] && [ ! -f "${PGDATA}/standby.signal" ]; then
  echo "another instance ($PRIMARY) is the primary: copying it afresh"
  rm -rf "${PGDATA}"
fi
if [ ! -s "${PGDATA}/PG_VERSION" ]; then
  if [ "$PRIMARY" = "$POD_NAME" ]; then
    printf '%s' "$SUPERUSER_PASSWORD" > /tmp/pwfile
    initdb -D "${PGDATA}" -U postgres --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C
    rm -f /tmp/pwfile
    printf 'host all all 0.0.0.0/0 scram-sha-256\\nhost replication all 0.0.0.0/0 scram-sha-256\\n' >> "${PGDATA}/pg_hba.conf"
  else
    export PGPASSWORD="$SUPERUSER_PASSWORD"
    until pg_basebackup -h "$PRIMARY_HOST" -U postgres -D "${PGDATA}" -X stream -c fast; do
      rm -rf "${PGDATA}"; sleep 2
    done
    touch "${PGDATA}/standby.signal"
  fi
fi
# A standby's connection to the primary goes on the command line, not in postgresql.auto.conf,
# where ALTER SYSTEM RESET ALL (parameters.ts) would remove it; the password stays in a file.
if [ -f "${PGDATA}/standby.signal" ]; then
  printf '*:5432:*:postgres:%s\n' "$SUPERUSER_PASSWORD" > /tmp/pgpass
  chmod 600 /tmp/pgpass
  set -- "$@" -c "primary_conninfo=host=$PRIMARY_HOST user=postgres passfile=/tmp/pgpass application_name=$POD_NAME"
fi
exec postgres -D "${PGDATA}" -c listen_addresses='*' -c unix_socket_directories=/tmp "$@"`;

export const superuserPassword = (db: SampleDBObject) => ({
  name: "SUPERUSER_PASSWORD",
  valueFrom: { secretKeyRef: { name: names(db).secret, key: "superuser-password" } },
});

export const restricted = { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } };

export function statefulSet(
  db: SampleDBObject,
  startArguments: string[],
  existing?: apps.StatefulSet,
): apps.StatefulSet {
  const { name, pods } = names(db);
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: meta(db, name),
    spec: {
      serviceName: pods,
      replicas: db.spec.instances,
      // Parallel: an instance on a lost node (NotReady, never Running again until the node returns)
      // must not keep the others from being recreated, as OrderedReady would after a failover.
      // Replicas wait for the primary themselves (pg_basebackup retried). The field is immutable:
      // a StatefulSet made before it keeps its policy rather than failing every apply.
      podManagementPolicy: existing?.spec?.podManagementPolicy ?? "Parallel",
      selector: { matchLabels: podLabels(db, "instance") },
      template: {
        metadata: { labels: podLabels(db, "instance") },
        spec: {
          securityContext: { fsGroup: UID, seccompProfile: { type: "RuntimeDefault" } },
          // One machine lost takes one instance, not the primary and its synchronous standby.
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: "kubernetes.io/hostname",
                    labelSelector: { matchLabels: podLabels(db, "instance") },
                  },
                },
              ],
            },
          },
          initContainers: [volumeOwner(db.spec.image, "data", DATA)],
          containers: [
            {
              name: "postgres",
              image: db.spec.image,
              // After the script: settings read only at start (see parameters.ts), as "$@".
              command: ["sh", "-c", START, "postgres", ...startArguments],
              env: [
                { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                { name: "PODS", value: pods },
                // Not in the template itself: a new primary must not roll every pod.
                {
                  name: "PRIMARY",
                  valueFrom: { configMapKeyRef: { name: names(db).config, key: "primary" } },
                },
                superuserPassword(db),
              ],
              ports: [{ name: "postgres", containerPort: PORT }],
              readinessProbe: {
                exec: { command: ["pg_isready", "-h", "/tmp", "-U", "postgres"] },
                periodSeconds: 2,
                // A busy node can take over a second to run it (the default timeout): a primary
                // that is only slow must not look gone, which starts a failover.
                timeoutSeconds: 5,
              },
              securityContext: { ...restricted, runAsNonRoot: true, runAsUser: UID },
              volumeMounts: [{ name: "data", mountPath: DATA }],
            },
          ],
          terminationGracePeriodSeconds: 30,
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data", labels: labels(db) },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: db.spec.storage } } },
        },
      ],
    },
  };
}

/** Volumes from a host-path provisioner are root's and ignore fsGroup: a root init container hands one over. */
export function volumeOwner(image: string, volume: string, path: string): core.Container {
  return {
    name: "volume-owner",
    image,
    command: ["sh", "-c", `chown ${UID}:${UID} ${path}`],
    securityContext: { runAsNonRoot: false, runAsUser: 0, capabilities: { drop: ["ALL"], add: ["CHOWN"] } },
    volumeMounts: [{ name: volume, mountPath: path }],
  };
}

/** What a one-shot Job of a SampleDB runs: a shell script in its image, with the superuser's password. */
export interface OneShot {
  name: string;
  component: "init" | "backup";
  script: string;
  backoffLimit: number;
  /** Finished Jobs go after this long (their results are in status or volumes by then). */
  ttlSeconds?: number;
  annotations?: Record<string, string>;
  env?: core.EnvVar[];
  volumes?: core.Volume[];
  mounts?: core.VolumeMount[];
  initContainers?: core.Container[];
}

/** A Job running one script against the database: non-root, retried on failure, its pods out of the Services. */
export function oneShotJob(db: SampleDBObject, job: OneShot): batch.Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { ...meta(db, job.name), ...(job.annotations ? { annotations: job.annotations } : {}) },
    spec: {
      backoffLimit: job.backoffLimit,
      ...(job.ttlSeconds ? { ttlSecondsAfterFinished: job.ttlSeconds } : {}),
      template: {
        metadata: { labels: podLabels(db, job.component) },
        spec: {
          restartPolicy: "OnFailure",
          securityContext: { runAsNonRoot: true, runAsUser: UID, seccompProfile: { type: "RuntimeDefault" } },
          ...(job.initContainers ? { initContainers: job.initContainers } : {}),
          containers: [
            {
              name: job.component,
              image: db.spec.image,
              command: ["sh", "-c", `set -e\nexport PGPASSWORD="$SUPERUSER_PASSWORD"\n${job.script}`],
              env: [superuserPassword(db), ...(job.env ?? [])],
              securityContext: restricted,
              ...(job.mounts ? { volumeMounts: job.mounts } : {}),
            },
          ],
          ...(job.volumes ? { volumes: job.volumes } : {}),
        },
      },
    },
  };
}

/** Quotes an SQL identifier (the schema's patterns already keep names plain). */
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * The initial configuration, idempotent (a retried Job redoes it): the application's role with the
 * Secret's password, its database, the extensions.
 */
export function initJob(
  db: SampleDBObject,
  restore?: { script: string; volume: core.Volume; mount: core.VolumeMount },
): batch.Job {
  const { rw, init } = names(db);
  const database = db.spec.database;
  const sql = [
    `SELECT 'CREATE ROLE ${ident(database)} LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${database}')\\gexec`,
    `ALTER ROLE ${ident(database)} PASSWORD :'app_password';`,
    `SELECT 'CREATE DATABASE ${ident(database)} OWNER ${ident(database)}' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '${database}')\\gexec`,
    `\\connect ${ident(database)}`,
    ...db.spec.extensions.map((extension) => `CREATE EXTENSION IF NOT EXISTS ${ident(extension)};`),
  ].join("\n");
  return oneShotJob(db, {
    name: init,
    component: "init",
    backoffLimit: 10,
    script: `psql -h ${rw} -U postgres -d postgres -v ON_ERROR_STOP=1 -v app_password="$APP_PASSWORD" <<'SQL'\n${sql}\nSQL\n${restore?.script ?? ""}`,
    env: [{ name: "APP_PASSWORD", valueFrom: { secretKeyRef: { name: names(db).secret, key: "password" } } }],
    ...(restore ? { volumes: [restore.volume], mounts: [restore.mount] } : {}),
  });
}
