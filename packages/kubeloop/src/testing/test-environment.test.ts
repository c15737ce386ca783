import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processesMentioning } from "../../test/processes.js";
import { controller, done } from "../controller/index.js";
import { defineResource } from "../resources/index.js";
import { defineWebhooks } from "../webhook/index.js";
import { ControlPlane } from "./control-plane.js";
import { startTestEnvironment, type TestEnvironment } from "./test-environment.js";

// startTestEnvironment on real API servers: one shared by the file, and one of its own where what
// is checked is that the environment stops its plane (disposal, a start that fails).

const Widget = defineResource({
  group: "env.example.com",
  version: "v1",
  kind: "Widget",
  spec: Type.Object({ size: Type.Integer() }),
  status: Type.Object({ seen: Type.Optional(Type.Integer()) }),
});
/** Writes the size it saw into the status: proof the controller ran on the object. */
const widgets = () =>
  controller(Widget).reconcile(async (widget, ctx) => {
    await ctx.status({ seen: widget.spec.size });
    return done();
  });
const widget = (name: string, size: number) => ({
  apiVersion: Widget.apiVersion,
  kind: "Widget",
  metadata: { name, namespace: "default" },
  spec: { size },
});

let shared: ControlPlane;
beforeAll(async () => {
  shared = await new ControlPlane({ profile: "apiserver" }).start();
});
afterAll(async () => {
  await shared?.stop();
});

/** The size the controller wrote into the Widget's status, once it has reconciled it. */
async function seen(env: TestEnvironment, name: string): Promise<number | undefined> {
  return (await env.client.get({ type: Widget, namespace: "default", name })).status?.seen;
}

/** Whether something accepts connections on `url`'s port. */
function answers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe("startTestEnvironment", () => {
  it("runs a controller on a defined resource's CRD, and `await using` stops the API server", async () => {
    let server: string;
    {
      await using env = await startTestEnvironment({ crds: [Widget], controllers: [widgets()] });
      server = env.plane.server;
      await env.client.create(widget("small", 3));
      await expect.poll(() => seen(env, "small"), { timeout: 20_000 }).toBe(3);
      const shown = await env.kubectl(["get", "widgets", "-o", "name"]);
      expect(shown.stdout.trim()).toBe("widget.env.example.com/small");
    }
    expect(await answers(server)).toBe(false);
  });

  it("stops the API server it started when a CRD does not install, and names the CRD", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubeloop-test-env-"));
    try {
      const crd = Widget.crd();
      // The API server refuses a CRD whose name is not <plural>.<group>.
      const broken = { ...crd, metadata: { name: "wrong.env.example.com" } };
      await expect(
        startTestEnvironment({ crds: [broken], plane: { dir: join(dir, "plane") } }),
      ).rejects.toThrow("wrong.env.example.com");
      expect(processesMentioning(join(dir, "plane"))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a crds entry it cannot read, a plane that is not running, and webhook manifests without webhooks, before starting anything", async () => {
    await expect(startTestEnvironment({ crds: [{ kind: "Widget" } as never] })).rejects.toThrow(
      "pass what defineResource() returns",
    );
    await expect(startTestEnvironment({ plane: new ControlPlane() })).rejects.toThrow("await plane.start()");
    const dir = mkdtempSync(join(tmpdir(), "kubeloop-test-env-"));
    try {
      const manifest = join(dir, "webhooks.yaml");
      writeFileSync(
        manifest,
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: op-validating}\nwebhooks: []\n",
      );
      await expect(startTestEnvironment({ webhookManifests: [manifest] })).rejects.toThrow(
        "pass the definitions they route to as `webhooks`",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runs one controller value again once the environment that ran it has stopped, and refuses it in two at once", async () => {
    const once = widgets();
    {
      await using first = await startTestEnvironment({ plane: shared, crds: [Widget], controllers: [once] });
      await first.client.create(widget("first", 1));
      await expect.poll(() => seen(first, "first"), { timeout: 20_000 }).toBe(1);
      await expect(startTestEnvironment({ plane: shared, controllers: [once] })).rejects.toThrow(
        /already running in a manager.*build another with controller/,
      );
      // The refused start stopped nothing of the first run.
      await first.client.create(widget("still", 5));
      await expect.poll(() => seen(first, "still"), { timeout: 20_000 }).toBe(5);
    }
    await using second = await startTestEnvironment({ plane: shared, controllers: [once] });
    await second.client.create(widget("second", 2));
    await expect.poll(() => seen(second, "second"), { timeout: 20_000 }).toBe(2);
  });

  it("serves the webhooks given: a validating webhook refuses a bad object, until the environment stops", async () => {
    const checked = defineWebhooks(Widget, {
      validate: (w) =>
        w.spec.size > 10 ? { allowed: false, message: "size may not exceed 10" } : { allowed: true },
    });
    {
      await using env = await startTestEnvironment({
        plane: shared,
        crds: [Widget],
        controllers: [widgets()],
        webhooks: [checked],
      });
      // The API server reads new webhook configurations from its own watch: a moment's delay, in
      // which a huge one is let through (and deleted, to try again).
      const createHuge = () =>
        env.client.create(widget("huge", 11)).then(
          () => env.client.delete(Widget, "huge", { namespace: "default" }).then(() => "created"),
          (error: Error) => error.message,
        );
      await expect.poll(createHuge, { timeout: 10_000 }).toContain("size may not exceed 10");
      await env.client.create(widget("fine", 4));
      await expect.poll(() => seen(env, "fine"), { timeout: 20_000 }).toBe(4);
    }
    // Stopped, it took its configuration from the shared plane: nothing routes to its closed port.
    await using after = await startTestEnvironment({ plane: shared });
    const names = await after.kubectl(["get", "validatingwebhookconfigurations", "-o", "name"]);
    expect(names.stdout).not.toContain("kubeloop-test");
    await expect
      .poll(
        () =>
          after.client.create(widget("huge", 11)).then(
            () => "created",
            (error: Error) => error.message,
          ),
        {
          timeout: 10_000,
        },
      )
      .toBe("created");
  });

  it("surfaces the manager's own error when it cannot start, and leaves a shared plane running", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      // Its health probe server cannot listen: start() rejects, and so does the environment.
      await expect(
        startTestEnvironment({
          plane: shared,
          controllers: [widgets()],
          manager: { probes: { port, host: "127.0.0.1" } },
        }),
      ).rejects.toThrow(/The manager failed to start: .*EADDRINUSE/);
    } finally {
      holder.close();
    }
    expect(await answers(shared.server)).toBe(true);
  });
});
