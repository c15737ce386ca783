import Type from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection, stopPlane } from "../../test/helpers.js";
import { Client } from "../client/client.js";
import { Invalid } from "../client/errors.js";
import type { ObjectOf } from "../client/types.js";
import { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import { defineResource, pluralize } from "./define-resource.js";
import { SchemaError, toStructuralSchema } from "./schema.js";

const Widget = defineResource({
  group: "schema.kubeloop.dev",
  version: "v1",
  kind: "Widget",
  shortNames: ["wd"],
  description: "A widget exercising every schema feature.",
  spec: Type.Object({
    count: Type.Integer({ minimum: 0, maximum: 100, default: 1, description: "How many widgets to run." }),
    ratio: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    name: Type.Optional(Type.String({ pattern: "^[a-z]+$", minLength: 1, maxLength: 10 })),
    mode: Type.Optional(Type.Union([Type.Literal("fast"), Type.Literal("safe")], { default: "safe" })),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    tags: Type.Optional(Type.Array(Type.String(), { maxItems: 3, "x-kubernetes-list-type": "set" })),
    port: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
    note: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    window: Type.Optional(
      Type.Object(
        { from: Type.Integer(), to: Type.Integer() },
        {
          "x-kubernetes-validations": [
            { rule: "self.from <= self.to", message: "from must not be after to" },
          ],
        },
      ),
    ),
  }),
  status: Type.Object({ ready: Type.Optional(Type.Boolean()) }),
  printerColumns: [{ name: "Count", type: "integer", jsonPath: ".spec.count" }],
});
type WidgetObject = ObjectOf<typeof Widget>;

let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  plane = await new ControlPlane().start();
  await plane.installCrdObjects([Widget.crd()]);
  client = await Client.connect({ kubeconfig: plane.kubeconfigPath });
});
afterAll(() => stopPlane(plane, client));

let counter = 0;
function widget(spec: Record<string, unknown>): WidgetObject {
  return {
    apiVersion: Widget.apiVersion,
    kind: Widget.kind,
    metadata: { name: `w-${++counter}`, namespace: "default" },
    spec: spec as WidgetObject["spec"],
  };
}

async function rejected(spec: Record<string, unknown>): Promise<string> {
  const error = await rejection(client.create(widget(spec)));
  expect(error).toBeInstanceOf(Invalid);
  return error.message;
}

describe("defineResource", () => {
  it("names the CRD after its plural and group, and types the object", () => {
    const crd = Widget.crd();
    expect(crd.metadata.name).toBe("widgets.schema.kubeloop.dev");
    expect(crd.spec.versions[0]?.subresources).toEqual({ status: {} });
    const object: WidgetObject = widget({ count: 3 });
    expect(object.spec.count).toBe(3);
  });

  it("pluralizes kinds as kubebuilder does", () => {
    expect(["nginx", "policy", "gateway", "class", "widget"].map(pluralize)).toEqual([
      "nginxes",
      "policies",
      "gateways",
      "classes",
      "widgets",
    ]);
  });

  it("has the API server apply defaults, also when spec is left out", async () => {
    const created = await client.create(widget({}));
    expect(created.spec).toEqual({ count: 1, mode: "safe" });
    const bare = await client.create({
      apiVersion: Widget.apiVersion,
      kind: Widget.kind,
      metadata: { name: "bare", namespace: "default" },
    });
    expect((bare as WidgetObject).spec).toEqual({ count: 1, mode: "safe" });
  });

  it("requires no field that has a default, so clients checking the published schema accept what the server does", async () => {
    const schema = toStructuralSchema(
      Type.Object({ count: Type.Integer({ default: 1 }), name: Type.String() }) as never,
    );
    expect(schema.required).toEqual(["name"]);
    // kubectl validates against the schema the server publishes (OpenAPI v3), before sending.
    const manifest = JSON.stringify({
      apiVersion: Widget.apiVersion,
      kind: "List",
      items: [
        {
          apiVersion: Widget.apiVersion,
          kind: Widget.kind,
          metadata: { name: "listed", namespace: "default" },
        },
      ],
    });
    const applied = await kubectl(["apply", "--validate=true", "-f", "-"], {
      kubeconfig: plane.kubeconfigPath,
      input: manifest,
    });
    expect(applied.code, applied.stderr).toBe(0);
  });

  it("accepts what the schema allows: maps, sets, int-or-string, null", async () => {
    const created = await client.create(
      widget({
        count: 5,
        labels: { a: "b" },
        tags: ["x", "y"],
        port: "http",
        note: null,
        window: { from: 1, to: 2 },
      }),
    );
    expect(created.spec).toMatchObject({ count: 5, labels: { a: "b" }, tags: ["x", "y"], port: "http" });
    await client.create(widget({ port: 8080 }));
  });

  it.each([
    [
      { count: 101 },
      "spec.count: Invalid value: 101: spec.count in body should be less than or equal to 100",
    ],
    [{ count: 1.5 }, 'spec.count: Invalid value: "number": spec.count in body must be of type integer'],
    [{ ratio: 0 }, "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"],
    [{ name: "ABC" }, "spec.name in body should match '^[a-z]+$'"],
    [{ name: "abcdefghijk" }, "spec.name: Too long: may not be more than 10"],
    [{ mode: "wild" }, 'spec.mode: Unsupported value: "wild": supported values: "fast", "safe"'],
    [
      { labels: { a: 1 } },
      'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string',
    ],
    [{ tags: ["a", "b", "c", "d"] }, "spec.tags: Too many: 4: must have at most 3 items"],
    [{ tags: ["a", "a"] }, 'spec.tags[1]: Duplicate value: "a"'],
    [{ port: true }, "spec.port"],
    [{ window: { from: 3, to: 1 } }, "spec.window: Invalid value: from must not be after to"],
  ])("rejects %j with the API server's message", async (spec, message) => {
    expect(await rejected(spec)).toContain(message);
  });

  it("documents fields for kubectl explain", async () => {
    const explained = await kubectl(["explain", "widgets.spec.count"], { kubeconfig: plane.kubeconfigPath });
    expect(explained.stdout).toContain("How many widgets to run.");
  });

  it("shows its printer columns in kubectl get", async () => {
    const table = await kubectl(["get", "wd", "-n", "default"], { kubeconfig: plane.kubeconfigPath });
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+COUNT\s+AGE$/);
  });

  it("refuses schema features a CRD cannot express, naming where they are", () => {
    expect(() =>
      toStructuralSchema(Type.Object({ a: Type.Union([Type.String(), Type.Boolean()]) }) as never),
    ).toThrow(SchemaError);
    expect(() => toStructuralSchema({ type: "object", oneOf: [] }, "spec")).toThrow(
      'spec: the JSON Schema keyword "oneOf"',
    );
    expect(() => defineResource({ group: "nodot", version: "v1", kind: "X", spec: Type.Object({}) })).toThrow(
      /must be a DNS subdomain with a dot/,
    );
  });
});
