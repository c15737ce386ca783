import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlane, stopPlane, until } from "../../test/helpers.js";
import { InformerRegistry } from "../cache/registry.js";
import type { Client } from "../client/client.js";
import { type KubeObject, resourceType } from "../client/types.js";
import { generatePassword, REDACTED, registerSecret } from "../resources/secrets.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { controller } from "./builder.js";
import type { Condition, EventSink } from "./context.js";
import type { Controller } from "./controller.js";
import { RetryableError } from "./result.js";

// Registered secrets never reach a failure's log line, Warning event or Ready condition, nor a
// note given to ctx.event, even when an error message (a driver's, a tool's) carries them.

interface CounterObject extends KubeObject {
  status?: { conditions?: Condition[] };
}
const Counter = resourceType<CounterObject>("test.kubeloop.dev/v1", "Counter");

let plane: ControlPlane;
let client: Client;
let registry: InformerRegistry;
let running: Controller<CounterObject> | undefined;

beforeAll(async () => {
  ({ plane, client } = await startPlane({
    crds: [join(import.meta.dirname, "../../test/fixtures/controller/counters.yaml")],
  }));
  registry = new InformerRegistry(client);
});
afterAll(async () => {
  await running?.stop(1_000);
  await registry?.stopAll();
  await stopPlane(plane, client);
});

describe("secrets in failures", () => {
  it("are redacted from the log, the Warning event, the Ready condition and event notes", async () => {
    const password = registerSecret(generatePassword());
    let logged = "";
    const logger = pino(
      { level: "info" },
      new Writable({
        write(chunk, _encoding, callback) {
          logged += chunk.toString();
          callback();
        },
      }),
    );
    const notes: string[] = [];
    const events: EventSink = {
      event: (_object, event) => notes.push(`${event.reason}: ${event.note ?? ""}`),
    };
    await client.create({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "secrets" },
    });
    await client.create<CounterObject>({
      apiVersion: "test.kubeloop.dev/v1",
      kind: "Counter",
      metadata: { name: "leaky", namespace: "secrets" },
    });
    running = controller(Counter)
      .named("leaky")
      .inNamespace("secrets")
      .reconcile((_counter, ctx) => {
        ctx.event("Normal", "Connecting", `dialing postgresql://app:${password}@db:5432/app`);
        throw new RetryableError(`could not connect to postgresql://app:${password}@db:5432/app`, {
          reason: "ServerUnreachable",
        });
      });
    running.prepare({ client, registry, logger, events });
    await Promise.all(running.allInformers.map((i) => i.synced));
    running.start();

    let ready: Condition | undefined;
    await until(
      async () => {
        const counter = await client.get({ type: Counter, namespace: "secrets", name: "leaky" });
        ready = counter.status?.conditions?.find((c) => c.type === "Ready");
        return ready?.reason === "ServerUnreachable";
      },
      20_000,
      "the failure in the Ready condition",
    );
    expect(ready?.message).toBe(`could not connect to postgresql://app:${REDACTED}@db:5432/app`);
    expect(notes).toContain(`Connecting: dialing postgresql://app:${REDACTED}@db:5432/app`);
    expect(notes).toContain(
      `ServerUnreachable: could not connect to postgresql://app:${REDACTED}@db:5432/app`,
    );
    expect(logged).toContain("reconcile failed; retrying with backoff");
    expect(logged).toContain(REDACTED);
    for (const text of [logged, ready?.message ?? "", ...notes]) expect(text).not.toContain(password);
  });
});
