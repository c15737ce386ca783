import pino from "pino";
import { describe, expect, it } from "vitest";
import type { InformerHandlers, InformerView } from "../cache/index.js";
import type { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import { ConfigMap } from "../k8s/index.js";
import { sleep } from "../util/index.js";
import { ObjectTasks, timerSpec } from "./object-tasks.js";

// The timer's `idle` rule alone, over a cache view fed by hand (the informer's contract is tested
// on a real API server in cache/; here only the timing decision is under test).

function handFedView(object: KubeObject) {
  let handlers: InformerHandlers<KubeObject> | undefined;
  const view = {
    type: ConfigMap,
    synced: Promise.resolve(),
    isSynced: true,
    on: (h: InformerHandlers<KubeObject>) => {
      handlers = h;
      return () => {
        handlers = undefined;
      };
    },
    onError: () => () => {},
    get: () => object,
    list: () => [object],
  } as unknown as InformerView<KubeObject>;
  return { view, change: () => handlers?.updated?.(object, object, { initial: false }) };
}

describe("per-object timer with idle", () => {
  it("does not run while the object keeps changing, and runs once it has been unchanged for `idle`", async () => {
    const object = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "busy", namespace: "ns" } };
    const { view, change } = handFedView(object);
    const runs: number[] = [];
    const tasks = new ObjectTasks<KubeObject>({
      controller: "idle",
      specs: [timerSpec("50ms", () => void runs.push(performance.now()), { initialDelay: 0, idle: "300ms" })],
      primary: view,
      shard: undefined,
      client: {} as Client,
      logger: pino({ level: "silent" }),
    });
    tasks.start();
    const from = performance.now();
    while (performance.now() - from < 700) {
      change();
      await sleep(100);
    }
    expect(runs).toEqual([]); // changed every 100 ms: never idle for 300 ms
    const quietFrom = performance.now();
    await sleep(600);
    await tasks.stop("test over", 1_000);
    expect(runs.length).toBeGreaterThan(0);
    // The last change came at most 100 ms before `quietFrom`: the first run waited out `idle` after it.
    expect((runs[0] as number) - quietFrom).toBeGreaterThanOrEqual(300 - 100 - 10);
  });
});
