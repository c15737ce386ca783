import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, isAlive } from "../../test/processes.js";
import { pollUntil } from "../util/index.js";
import { ControlPlane } from "./control-plane.js";
import { kubectl } from "./kubectl.js";
import { freePort, killOperators, revokeRule, startOperator, stopOperators } from "./operator-process.js";

// Tiny operators: Node scripts that log JSON as pino does and end as each test needs.
let dir: string;
const script = (name: string, body: string): string => {
  const path = join(dir, name);
  writeFileSync(path, body);
  return path;
};
const LOGS_THEN_EXITS = `
console.log(JSON.stringify({ level: 30, msg: "starting", port: process.env.PORT }));
console.error("a plain line on stderr");
console.log(JSON.stringify({ level: 50, msg: "giving up" }));
process.exitCode = 3;
`;
const STOPS_ON_SIGTERM = `
console.log(JSON.stringify({ level: 30, msg: "running" }));
process.on("SIGTERM", () => {
  console.log(JSON.stringify({ level: 30, msg: "stopping" }));
  process.exit(0);
});
setInterval(() => {}, 1000);
`;
const IGNORES_SIGTERM = `
process.on("SIGTERM", () => console.log(JSON.stringify({ msg: "ignoring SIGTERM" })));
console.log(JSON.stringify({ msg: "running" }));
setInterval(() => {}, 1000);
`;

let plane: ControlPlane;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "kubeloop-operator-process-"));
  plane = await new ControlPlane().start();
});
afterAll(async () => {
  killOperators();
  await plane?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const running = async (operator: { logs: () => Record<string, unknown>[] }) =>
  pollUntil(() => operator.logs().some((line) => line.msg === "running"), {
    timeoutMs: 15_000,
    message: "the script to log that it runs",
  });

describe("startOperator", () => {
  it("collects stdout and stderr, parses the JSON lines, and resolves exited with the exit code", async () => {
    script("logs.mjs", LOGS_THEN_EXITS);
    const operator = startOperator("logs.mjs", { cwd: dir, env: { PORT: "8080" } });
    expect(await operator.exited).toBe(3);
    expect(operator.output()).toContain("a plain line on stderr");
    expect(operator.logs()).toEqual([
      { level: 30, msg: "starting", port: "8080" },
      { level: 50, msg: "giving up" },
    ]);
    expect(await operator.stop()).toBe(3); // stopping an ended operator only reports how it ended
  });

  it("stop() sends SIGTERM and resolves with the exit code of a clean shutdown", async () => {
    const operator = startOperator(script("graceful.mjs", STOPS_ON_SIGTERM));
    await running(operator);
    expect(await operator.stop()).toBe(0);
    expect(operator.logs().map((line) => line.msg)).toEqual(["running", "stopping"]);
  });

  it("stop() kills an operator that ignores SIGTERM once the grace period is over", async () => {
    const operator = startOperator(script("stubborn.mjs", IGNORES_SIGTERM), { stopGraceMs: 500 });
    await running(operator);
    expect(await operator.stop()).toBeNull();
    expect(operator.process.signalCode).toBe("SIGKILL");
    expect(operator.output()).toContain("ignoring SIGTERM");
  });

  it("waitUntil() fails at once when the operator exits, and on a timeout, with the end of its output", async () => {
    const exiting = startOperator(script("exits.mjs", LOGS_THEN_EXITS));
    await expect(exiting.waitUntil(() => false, { timeoutMs: 60_000, message: "a miracle" })).rejects.toThrow(
      /exited \(code 3\) while waiting for a miracle[\s\S]*output ends:[\s\S]*giving up/,
    );
    const operator = startOperator(script("waits.mjs", STOPS_ON_SIGTERM));
    await operator.waitUntil(() => operator.logs().length > 0, { timeoutMs: 15_000 });
    await expect(operator.waitUntil(() => false, { timeoutMs: 300, message: "a miracle" })).rejects.toThrow(
      /a miracle[\s\S]*output ends:\n\{"level":30,"msg":"running"\}/,
    );
    expect(await operator.stop()).toBe(0);
  });
});

describe("startOperator: cleanup, process groups and exits", () => {
  it("is stopped at the end of an `await using` block", async () => {
    let pid = 0;
    {
      await using operator = startOperator(script("disposed.mjs", STOPS_ON_SIGTERM));
      await running(operator);
      pid = operator.process.pid ?? 0;
      expect(isAlive(pid)).toBe(true);
    }
    expect(isAlive(pid)).toBe(false);
  });

  it("kill() with a process group reaches the operator's children", async () => {
    const parent = script(
      "parent.mjs",
      `import { spawn } from "node:child_process";
const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
console.log(JSON.stringify({ msg: "running", child: child.pid }));
setInterval(() => {}, 1000);
`,
    );
    const operator = startOperator(parent, { processGroup: true });
    await running(operator);
    const child = operator.logs()[0]?.child as number;
    expect(isAlive(child)).toBe(true);
    operator.kill();
    expect(await operator.exited).toBeNull();
    expect(await eventually(() => !isAlive(child))).toBe(true);
  });

  it("stopOperators() and killOperators() end every operator still running", async () => {
    const graceful = [
      startOperator(script("a.mjs", STOPS_ON_SIGTERM)),
      startOperator(script("b.mjs", STOPS_ON_SIGTERM)),
    ];
    await Promise.all(graceful.map(running));
    expect(await stopOperators()).toEqual([0, 0]);
    const stubborn = startOperator(script("c.mjs", IGNORES_SIGTERM));
    await running(stubborn);
    killOperators();
    expect(await stubborn.exited).toBeNull();
    expect(stubborn.process.signalCode).toBe("SIGKILL");
    expect(await stopOperators()).toEqual([]); // nothing left
  });

  it("kills its operators when the test process exits without stopping them", async () => {
    const operatorScript = script("orphan.mjs", STOPS_ON_SIGTERM);
    const testing = join(import.meta.dirname, "../../dist/testing/index.js");
    const owner = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { startOperator } from ${JSON.stringify(testing)};
const operator = startOperator(${JSON.stringify(operatorScript)});
operator.process.stdout.once("data", () => { console.log(operator.process.pid); process.exit(1); });`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const [line] = await createInterface({ input: owner.stdout })
      [Symbol.asyncIterator]()
      .next()
      .then((r) => [r.value as string]);
    const pid = Number(line);
    expect(pid).toBeGreaterThan(0);
    expect(await eventually(() => !isAlive(pid))).toBe(true);
  });
});

describe("freePort", () => {
  it("returns a port this process can bind on 127.0.0.1", async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
    server.close();
    expect(port).toBeGreaterThan(0);
  });
});

describe("revokeRule", () => {
  const IDENTITY = "system:serviceaccount:ops:operator";
  const k = (args: string[], input?: string) =>
    kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  const canI = async (...args: string[]) =>
    (await k(["auth", "can-i", ...args, `--as=${IDENTITY}`])).stdout.trim();

  it("removes the one rule naming the resource; the identity loses it and keeps the others", async () => {
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "operator" },
      rules: [
        { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "update"] },
        { apiGroups: ["apps"], resources: ["deployments/finalizers"], verbs: ["update"] },
      ],
    };
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "operator" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "operator" },
      subjects: [{ kind: "ServiceAccount", namespace: "ops", name: "operator" }],
    };
    const applied = await k(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: [role, binding] }),
    );
    expect(applied.code, applied.stderr).toBe(0);
    await pollUntil(
      async () => (await canI("update", "deployments.apps", "--subresource=finalizers")) === "yes",
      {
        timeoutMs: 10_000,
        message: "the binding to take effect",
      },
    );
    await revokeRule({
      kubeconfig: plane.kubeconfigPath,
      role: "clusterrole/operator",
      resource: "deployments/finalizers",
      as: IDENTITY,
    });
    expect(await canI("update", "deployments.apps", "--subresource=finalizers")).toBe("no");
    expect(await canI("update", "deployments.apps")).toBe("yes");
    await expect(
      revokeRule({
        kubeconfig: plane.kubeconfigPath,
        role: "clusterrole/operator",
        resource: "deployments/finalizers",
        as: IDENTITY,
      }),
    ).rejects.toThrow("clusterrole/operator has 0 rules listing deployments/finalizers");
    await expect(
      revokeRule({
        kubeconfig: plane.kubeconfigPath,
        role: "clusterrole/missing",
        resource: "pods",
        as: IDENTITY,
      }),
    ).rejects.toThrow("cannot read clusterrole/missing");
  });
});
