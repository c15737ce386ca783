import { Manager } from "kubeloop";
import { ControlPlane, kubectl, pollUntil } from "kubeloop/testing";
import { sampleDBController } from "../src/controller.ts";
import { sampleDBMetrics } from "../src/metrics.ts";
import { COMPONENT } from "../src/objects.ts";
import { SampleDB } from "../src/resources.ts";

/**
 * One test file's world: a plane of real nodes with the SampleDB CRD and the PostgreSQL image, and
 * the operator running in this process. Everything is checked as a user would: kubectl, and SQL
 * from pods.
 */
export class World {
  plane!: ControlPlane;
  /** The PostgreSQL image's name in the nodes. */
  postgres!: string;
  private manager: Manager | undefined;

  /**
   * Starts the plane (while `alongside`, e.g. an image build, runs) and loads the PostgreSQL image;
   * installs the CRD unless the test installs the operator itself (`crd: false`).
   */
  async start(nodes = 2, options: { crd?: boolean; alongside?: Promise<unknown> } = {}): Promise<this> {
    [this.plane] = await Promise.all([
      new ControlPlane({ profile: "node", nodes }).start(),
      options.alongside,
    ]);
    this.postgres = await this.plane.loadBaseImage("postgres");
    if (options.crd !== false) await this.plane.installCrdObjects([SampleDB.crd()]);
    return this;
  }

  /** With `metrics`, /metrics on a free loopback port (returned), SQL readings reused for 1 s. */
  async startOperator(options: { metrics?: boolean } = {}): Promise<number | undefined> {
    await this.stopOperator();
    process.env.LOG_LEVEL ??= "warn";
    const manager = new Manager({
      kubeconfig: this.plane.kubeconfigPath,
      metrics: options.metrics ? { port: 0, secure: false } : false,
      probes: false,
      handleSignals: false,
      gracefulShutdownMs: 2_000,
    });
    manager.add(sampleDBController);
    if (options.metrics) sampleDBMetrics.register(manager.metrics.registry, { maxAgeMs: 1_000 });
    const running = manager.start();
    await Promise.race([manager.ready, running]);
    this.manager = manager;
    return manager.ports.metrics;
  }

  async stopOperator(): Promise<void> {
    const manager = this.manager;
    this.manager = undefined;
    await manager?.stop();
  }

  async stop(): Promise<void> {
    await this.stopOperator().catch(() => {});
    await this.plane?.stop();
  }

  /** kubectl that must succeed; returns stdout. */
  async ok(args: string[], input?: string): Promise<string> {
    const result = await kubectl(args, {
      kubeconfig: this.plane.kubeconfigPath,
      ...(input ? { input } : {}),
    });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  }

  /**
   * Creates SampleDBs (name → the fields of `spec` as YAML flow, image and storage added) with
   * every instance 0, the first primary, on `node` and the others elsewhere: the other nodes are
   * cordoned until each instance 0 is scheduled, then the other instances (put on `node` too, the
   * only one open) are deleted, to be made again away from instance 0 (the pods' anti-affinity).
   */
  async createOnNode(namespace: string, specs: Record<string, string>, node: string): Promise<void> {
    const others = this.plane.nodeNames.filter((n) => n !== node);
    for (const other of others) await this.ok(["cordon", other]);
    const items = Object.entries(specs).map(
      ([name, spec]) => `---
apiVersion: seed.example.com/v1
kind: SampleDB
metadata: { name: ${name} }
spec: { ${spec}, storage: 256Mi, image: ${this.postgres} }
`,
    );
    await this.ok(["-n", namespace, "apply", "-f", "-"], items.join(""));
    const placed = async () =>
      (
        await this.ok([
          "-n",
          namespace,
          "get",
          "pods",
          "-l",
          `${COMPONENT}=instance`,
          "-o",
          'jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName}{"\\n"}{end}',
        ])
      )
        .trim()
        .split("\n")
        .map((line) => line.split("=") as [string, string]);
    await pollUntil(
      async () => {
        const pods = await placed();
        return Object.keys(specs).every((db) => pods.some(([pod, at]) => pod === `${db}-0` && at === node));
      },
      { timeoutMs: 120_000, intervalMs: 500, message: `every instance 0 scheduled on ${node}` },
    );
    for (const other of others) await this.ok(["uncordon", other]);
    const again = (await placed())
      .filter(([pod, at]) => !pod.endsWith("-0") && at === node)
      .map(([pod]) => pod);
    if (again.length) await this.ok(["-n", namespace, "delete", "pod", ...again, "--wait=false"]);
  }

  /** Waits until the SampleDB's phase is `phase`; returns the seconds it took. */
  async waitForPhase(namespace: string, name: string, phase: string, timeoutMs = 180_000): Promise<number> {
    const started = Date.now();
    let last = "";
    await pollUntil(
      async () => {
        last = await this.ok(["-n", namespace, "get", "sampledb", name, "-o", "wide"]);
        return new RegExp(`^${name}\\s+${phase}\\s`, "m").test(last);
      },
      { timeoutMs, intervalMs: 500, message: `SampleDB ${namespace}/${name} to be ${phase}` },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; kubectl get sampledb -o wide said:\n${last}`);
    });
    return (Date.now() - started) / 1000;
  }

  /** Waits until `jsonpath` of the SampleDB satisfies `check`; returns the value. */
  async waitFor(
    namespace: string,
    name: string,
    jsonpath: string,
    check: (value: string) => boolean,
    what: string,
    timeoutMs = 120_000,
  ): Promise<string> {
    let value = "";
    await pollUntil(
      async () => {
        value = await this.ok(["-n", namespace, "get", "sampledb", name, "-o", `jsonpath=${jsonpath}`]);
        return check(value);
      },
      { timeoutMs, intervalMs: 500, message: what },
    );
    return value;
  }

  /**
   * Runs `script` (sh) in a pod of the PostgreSQL image with the SampleDB's connection as libpq's
   * environment (PGHOST etc. from its ConfigMap, PGUSER/PGPASSWORD from its Secret), as an
   * application would; returns its output, or throws with it when it fails.
   */
  async sqlPod(
    namespace: string,
    db: string,
    podName: string,
    script: string,
    host = "host",
    timeoutMs = 90_000,
  ): Promise<string> {
    return this.runPod(namespace, podName, script, { db, host, timeoutMs });
  }

  /**
   * Starts a writer pod for `seconds`: a new connection per row (as a pooler would) inserts into
   * table `t` (an id column with a default) through the read-write Service, and prints each row the
   * server acknowledged as `<server time, epoch s>|<id>`.
   */
  async startWriter(
    namespace: string,
    db: string,
    podName: string,
    seconds: number,
    options: { node?: string } = {},
  ): Promise<void> {
    const script = `end=$(( $(date +%s) + ${seconds} )); while [ "$(date +%s)" -lt "$end" ] && [ ! -f /tmp/stop ]; do PGCONNECT_TIMEOUT=2 timeout 5 psql -Atqc "${INSERT}" 2>/dev/null; sleep 0.1; done`;
    await this.applyPod(namespace, podName, script, { db, ...options });
  }

  /** Ends a `startWriter` writer before its time (it finishes the row it is on, then Succeeds). */
  async stopWriter(namespace: string, podName: string): Promise<void> {
    await this.ok(["-n", namespace, "exec", podName, "--", "touch", "/tmp/stop"]);
  }

  /**
   * Starts a writer that keeps one connection (through the read-write Service) for `rows` inserts,
   * 0.1 s apart, printing each acknowledged row as `startWriter`'s do and, when the session ends,
   * what psql said and its exit code.
   */
  async startHeldWriter(
    namespace: string,
    db: string,
    podName: string,
    rows: number,
    options: { node?: string } = {},
  ): Promise<void> {
    const script = `i=0; while [ $i -lt ${rows} ]; do echo "${INSERT};"; sleep 0.1; i=$((i+1)); done | psql -Atq 2>&1; echo "psql exited $?"`;
    await this.applyPod(namespace, podName, script, { db, ...options });
  }

  /**
   * The writer's acknowledged rows as [time in ms, id], and its log's other lines (none expected; a
   * shell's 'Terminated' is shown, not counted).
   */
  async writerRows(
    namespace: string,
    podName: string,
  ): Promise<{ rows: [number, number][]; other: string[] }> {
    const lines = (await this.ok(["-n", namespace, "logs", podName])).trim().split("\n");
    const row = /^(\d+(?:\.\d+)?)\|(\d+)$/;
    return {
      rows: lines.flatMap((line) => {
        const match = row.exec(line);
        return match ? [[Number(match[1]) * 1000, Number(match[2])] as [number, number]] : [];
      }),
      other: lines.filter((line) => line && !row.test(line)),
    };
  }

  /** The backup files in a SampleDB's backup volume, oldest first. */
  async backupFiles(namespace: string, db: string, podName: string): Promise<string[]> {
    const out = await this.backupPod(namespace, db, podName, "ls -1 /backups");
    return out
      .split("\n")
      .filter((file) => file.endsWith(".dump"))
      .sort();
  }

  /** Runs `script` (sh) in a pod of the PostgreSQL image with the SampleDB's backup volume at /backups (read-only). */
  async backupPod(namespace: string, db: string, podName: string, script: string): Promise<string> {
    return this.runPod(namespace, podName, script, { backups: `${db}-backups` });
  }

  private async runPod(
    namespace: string,
    podName: string,
    script: string,
    options: { db?: string; host?: string; backups?: string; timeoutMs?: number; node?: string },
  ): Promise<string> {
    await this.applyPod(namespace, podName, script, options);
    let phase = "";
    await pollUntil(
      async () => {
        phase = await this.ok(["-n", namespace, "get", "pod", podName, "-o", "jsonpath={.status.phase}"]);
        return phase === "Succeeded" || phase === "Failed";
      },
      { timeoutMs: options.timeoutMs ?? 90_000, intervalMs: 500, message: `pod ${podName} to finish` },
    );
    const logs = await this.ok(["-n", namespace, "logs", podName]);
    if (phase !== "Succeeded") throw new Error(`pod ${podName} failed:\n${logs}`);
    return logs;
  }

  /** Creates a pod of the PostgreSQL image running `script`, with a SampleDB's connection and/or backup volume. */
  private async applyPod(
    namespace: string,
    podName: string,
    script: string,
    { db, host = "host", backups, node }: { db?: string; host?: string; backups?: string; node?: string },
  ): Promise<void> {
    const fromConfig = (env: string, key: string) => ({
      name: env,
      valueFrom: { configMapKeyRef: { name: `${db ?? ""}-connection`, key } },
    });
    const fromSecret = (env: string, key: string) => ({
      name: env,
      valueFrom: { secretKeyRef: { name: `${db ?? ""}-credentials`, key } },
    });
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: podName, namespace },
      spec: {
        restartPolicy: "Never",
        ...(node ? { nodeName: node } : {}),
        securityContext: { runAsNonRoot: true, runAsUser: 65532 },
        containers: [
          {
            name: "app",
            image: this.postgres,
            command: ["sh", "-c", script],
            env: db
              ? [
                  fromConfig("PGHOST", host),
                  fromConfig("PGPORT", "port"),
                  fromConfig("PGDATABASE", "database"),
                  fromSecret("PGUSER", "username"),
                  fromSecret("PGPASSWORD", "password"),
                ]
              : [],
            volumeMounts: backups ? [{ name: "backups", mountPath: "/backups", readOnly: true }] : [],
          },
        ],
        volumes: backups
          ? [{ name: "backups", persistentVolumeClaim: { claimName: backups, readOnly: true } }]
          : [],
      },
    };
    await this.ok(["apply", "-f", "-"], JSON.stringify(pod));
  }
}

/** The server's clock (the kernel's, as this process's): the image's date has whole seconds only. */
const INSERT = "insert into t default values returning extract(epoch from clock_timestamp()), id";

/**
 * The outage in acknowledged writes around `deletedAt` (ms): the longest pause between two rows
 * from 2 s before it, and when writes were accepted again (the first row after that pause), in ms
 * after `deletedAt`.
 */
export function writeOutage(
  rows: [number, number][],
  deletedAt: number,
): { pauseMs: number; resumedMs: number } {
  const times = rows.map(([at]) => at).filter((at) => at >= deletedAt - 2_000);
  let pauseMs = 0;
  let resumedAt = times[0] ?? deletedAt;
  for (let i = 1; i < times.length; i++) {
    const gap = (times[i] ?? 0) - (times[i - 1] ?? 0);
    if (gap > pauseMs) [pauseMs, resumedAt] = [gap, times[i] ?? 0];
  }
  return { pauseMs, resumedMs: resumedAt - deletedAt };
}
