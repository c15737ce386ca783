import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectlOn } from "../../test/plane-kubectl.js";
import { pollUntil } from "../util/index.js";
import { ControlPlane } from "./control-plane.js";

// The PostgreSQL base image (Debian 12's postgresql-15, see node-images.ts) in a real container:
// initdb, the server, psql and pg_dump, as a non-root user, on a volume the default StorageClass binds.
describe("ControlPlane, node profile: the postgres image", () => {
  let plane: ControlPlane;
  let postgres: string;
  const k = kubectlOn(() => plane);

  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "node" }).start();
    postgres = await plane.loadBaseImage("postgres");
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it("initialises a cluster on a PersistentVolume, serves SQL and dumps it", async () => {
    const script = [
      "set -e",
      "initdb -D /data/pgdata -U postgres --auth=trust -E UTF8 --locale=C >/dev/null",
      'pg_ctl -D /data/pgdata -l /tmp/server.log -o "-c listen_addresses= -c unix_socket_directories=/tmp" -w start >/dev/null',
      'psql -q -h /tmp -U postgres -Atc "create table t (n int); insert into t select generate_series(1, 42); select count(*) from t"',
      "pg_dump -h /tmp -U postgres -t t | grep -c '^CREATE TABLE'",
      "psql --version",
    ].join("\n");
    const manifest = {
      apiVersion: "v1",
      kind: "List",
      items: [
        {
          apiVersion: "v1",
          kind: "PersistentVolumeClaim",
          metadata: { name: "data", namespace: "default" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "100Mi" } } },
        },
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "pg", namespace: "default" },
          spec: {
            restartPolicy: "Never",
            // The host-path provisioner's volumes are root's: a root init container hands it over.
            initContainers: [
              {
                name: "chown",
                image: postgres,
                command: ["chown", "65532:65532", "/data"],
                securityContext: { runAsUser: 0 },
                volumeMounts: [{ name: "data", mountPath: "/data" }],
              },
            ],
            containers: [
              {
                name: "pg",
                image: postgres,
                command: ["sh", "-c", script],
                volumeMounts: [{ name: "data", mountPath: "/data" }],
              },
            ],
            volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }],
          },
        },
      ],
    };
    const applied = await k(["apply", "-f", "-"], JSON.stringify(manifest));
    expect(applied.code, applied.stderr).toBe(0);
    let phase = "";
    await pollUntil(
      async () => {
        phase = (await k(["get", "pod/pg", "-o", "jsonpath={.status.phase}"])).stdout;
        return phase === "Succeeded" || phase === "Failed";
      },
      { timeoutMs: 120_000, intervalMs: 500, message: "the postgres pod to finish" },
    );
    const logs = await k(["logs", "pod/pg"]);
    expect(phase, `${logs.stdout}${logs.stderr}`).toBe("Succeeded");
    // initdb warns that the image has no locales (it uses C); the results come last.
    expect(logs.stdout.trim().split("\n").slice(-3)).toEqual([
      "42",
      "1",
      "psql (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)",
    ]);
  });
});
