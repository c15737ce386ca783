import { Writable } from "node:stream";
import type { ConfigMap as ConfigMapObject } from "kubernetes-types/core/v1.js";
import pino from "pino";
import { Client, type KubeObject } from "../src/client/index.js";
import type { Controller } from "../src/controller/index.js";
import { Manager, type ManagerOptions } from "../src/manager/index.js";
import { ControlPlane, type ControlPlaneOptions, kubectl } from "../src/testing/index.js";
import { pollUntil } from "../src/util/index.js";

/** A ConfigMap `name` in `ns` with `data`, to create or apply. */
export function configMap(ns: string, name: string, data: Record<string, string> = {}): ConfigMapObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data };
}

/** The error a promise rejects with; fails the test if it resolves instead. */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (error: Error) => error,
  );
}

/**
 * Polls `check` every 50 ms until it holds; throws naming `what` after `ms`, followed by
 * `detail()` when given (a child process's output, say).
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms = 20_000,
  what = "condition",
  detail?: () => string,
): Promise<void> {
  await pollUntil(check, { timeoutMs: ms, intervalMs: 50, message: what }).catch((error: Error) => {
    if (!detail) throw error;
    throw new Error(`${error.message}\n${detail()}`, { cause: error });
  });
}

/** Makes fresh namespaces `<prefix>-1`, `<prefix>-2`, …: tests share a plane, never their objects. */
export function namespaces(client: () => Client, prefix: string): () => Promise<string> {
  let counter = 0;
  return async () => {
    const name = `${prefix}-${++counter}`;
    await client().create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    return name;
  };
}

/**
 * Whether the API server has a feature gate on, as its own metrics report it
 * (`kubernetes_feature_enabled`, Kubernetes 1.26+): tests that depend on a gate read the truth
 * from the server rather than guessing from its version.
 */
export async function serverFeatureEnabled(kubeconfig: string, name: string): Promise<boolean> {
  const metrics = await kubectl(["get", "--raw", "/metrics"], { kubeconfig });
  const line = new RegExp(`^kubernetes_feature_enabled\\{name="${name}",stage="[A-Z]*"\\} ([01])$`, "m").exec(
    metrics.stdout,
  );
  if (!line) throw new Error(`the API server's /metrics does not report the ${name} feature gate`);
  return line[1] === "1";
}

/**
 * A test file's control plane and an admin client on it. One plane per file (or per `describe`):
 * `beforeAll(async () => ({ plane, client } = await startPlane()));` and
 * `afterAll(() => stopPlane(plane, client));`.
 */
export async function startPlane(
  options?: ControlPlaneOptions,
): Promise<{ plane: ControlPlane; client: Client }> {
  const plane = await new ControlPlane(options).start();
  return { plane, client: await Client.connect({ kubeconfig: plane.kubeconfigPath }) };
}

/** Closes the client, then stops the plane; either may be missing when `startPlane` failed. */
export async function stopPlane(plane: ControlPlane | undefined, client: Client | undefined): Promise<void> {
  await client?.close();
  await plane?.stop();
}

/** A pino logger at `level` whose JSON lines a test reads back, parsed, from `lines`. */
export function capturingLogger<Line extends object = { level: number; msg: string }>(
  level = "info",
): { logger: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk, _encoding, callback) {
        for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
        callback();
      },
    }),
  );
  return { logger, lines };
}

/**
 * A manager as a test runs one (no probes, metrics or signal handlers unless `options` say so),
 * with `controller` added, started and ready. Stop it with `manager.stop()`, then await `running`.
 */
export async function startManager<T extends KubeObject>(
  options: ManagerOptions,
  controller: Controller<T>,
): Promise<{ manager: Manager; running: Promise<void> }> {
  const manager = new Manager({ probes: false, metrics: false, handleSignals: false, ...options });
  manager.add(controller);
  const running = manager.start();
  await manager.ready;
  return { manager, running };
}

/** A manager's verbose `/readyz` answer, or undefined while its probe server has no port yet. */
export async function readyz(manager: Manager): Promise<{ status: number; body: string } | undefined> {
  const port = manager.ports.probes;
  if (!port) return undefined;
  const response = await fetch(`http://127.0.0.1:${port}/readyz?verbose`);
  return { status: response.status, body: await response.text() };
}
