import Type from "typebox";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../client/types.js";
import { defineResource } from "../resources/define-resource.js";
import { localWebhookServing } from "../testing/local-webhooks.js";
import {
  defineWebhooks,
  mapClientConfigs,
  webhookConfigurations,
  withConversion,
} from "./define-webhooks.js";

// Pure checks of what the declarations produce; the API server calling them is tested in
// server.test.ts, conversion.test.ts and the nginx example's end-to-end test.
const Widget = defineResource({
  group: "shop.example.com",
  version: "v1",
  kind: "Widget",
  spec: Type.Object({ size: Type.Integer() }),
  otherVersions: [{ version: "v1beta1", spec: Type.Object({ width: Type.Integer() }) }],
});
const Region = defineResource({
  group: "geo.example.com",
  version: "v2",
  kind: "Region",
  scope: "Cluster",
  spec: Type.Object({ code: Type.String() }),
});
const identity = (o: KubeObject) => o;

describe("defineWebhooks", () => {
  it("names the paths as kubebuilder does and routes each kind to them", () => {
    const widget = defineWebhooks(Widget, {
      default: (w) => {
        w.spec.size ||= 1;
      },
      validate: () => ({ allowed: true }),
      convert: { hub: "v1", toHub: { v1beta1: identity }, fromHub: { v1beta1: identity } },
      failurePolicy: "Ignore",
      timeoutSeconds: 5,
      validateOn: ["CREATE", "UPDATE", "DELETE"],
    });
    const region = defineWebhooks(Region, { validate: () => ({ allowed: false, message: "no" }) });
    expect(widget.paths).toEqual({
      default: "/mutate-shop-example-com-v1-widget",
      validate: "/validate-shop-example-com-v1-widget",
      convert: "/convert-shop-example-com-widget",
    });
    const target = { service: { name: "op-webhook-service", namespace: "op-system" } };
    const { mutating, validating } = webhookConfigurations("op", [widget, region], target);
    expect(mutating).toMatchObject({
      kind: "MutatingWebhookConfiguration",
      metadata: { name: "op-mutating" },
      webhooks: [
        {
          name: "default.widgets.shop.example.com",
          clientConfig: {
            service: {
              name: "op-webhook-service",
              namespace: "op-system",
              port: 443,
              path: "/mutate-shop-example-com-v1-widget",
            },
          },
          rules: [
            {
              apiGroups: ["shop.example.com"],
              apiVersions: ["v1"],
              resources: ["widgets"],
              operations: ["CREATE", "UPDATE"],
              scope: "Namespaced",
            },
          ],
          failurePolicy: "Ignore",
          timeoutSeconds: 5,
          sideEffects: "None",
          matchPolicy: "Equivalent",
        },
      ],
    });
    // Sorted by group: geo before shop; a cluster-scoped kind's rule says so.
    const hooks = (
      validating as { webhooks: { name: string; rules: { operations: string[]; scope: string }[] }[] }
    ).webhooks;
    expect(hooks.map((h) => h.name)).toEqual([
      "validate.regions.geo.example.com",
      "validate.widgets.shop.example.com",
    ]);
    expect(hooks[0]?.rules[0]?.scope).toBe("Cluster");
    expect(hooks[1]?.rules[0]?.operations).toEqual(["CREATE", "UPDATE", "DELETE"]);
    const crd = withConversion(Widget.crd(), widget, target);
    expect(crd.spec.conversion?.webhook.clientConfig).toEqual({
      service: {
        name: "op-webhook-service",
        namespace: "op-system",
        port: 443,
        path: "/convert-shop-example-com-widget",
      },
    });
    // No admission parts, no configuration of that kind.
    expect(webhookConfigurations("op", [region], target).mutating).toBeUndefined();
  });

  it("refuses a declaration with nothing in it, or an impossible timeout", () => {
    expect(() => defineWebhooks(Region, {})).toThrow("give at least one of default, validate, convert");
    expect(() => defineWebhooks(Region, { validate: () => ({ allowed: true }), timeoutSeconds: 31 })).toThrow(
      "timeoutSeconds must be 1–30",
    );
  });

  it("maps the clientConfigs of a CRD's conversion and of webhook configurations, and nothing else", () => {
    const widget = defineWebhooks(Widget, {
      validate: () => ({ allowed: true }),
      convert: { hub: "v1", toHub: { v1beta1: identity }, fromHub: { v1beta1: identity } },
    });
    const target = { url: "https://example.test" };
    const withCa = (config: object) => ({ ...config, caBundle: "Q0E=" });
    const crd = mapClientConfigs(withConversion(Widget.crd(), widget, target), withCa);
    const { validating } = webhookConfigurations("op", [widget], target);
    expect(crd.spec.conversion?.webhook.clientConfig).toEqual({
      url: "https://example.test/convert-shop-example-com-widget",
      caBundle: "Q0E=",
    });
    expect(mapClientConfigs(validating as object, withCa)).toMatchObject({
      webhooks: [
        {
          clientConfig: { url: "https://example.test/validate-shop-example-com-v1-widget", caBundle: "Q0E=" },
        },
      ],
    });
    const other = { kind: "ConfigMap", webhooks: [{ clientConfig: { url: "u" } }] };
    expect(mapClientConfigs(other, withCa)).toEqual({
      kind: "ConfigMap",
      webhooks: [{ clientConfig: { url: "u" } }],
    });
  });

  it("is pointed at a local server by localWebhookServing().rewrite, with its CA", async () => {
    const widget = defineWebhooks(Widget, {
      validate: () => ({ allowed: true }),
      convert: { hub: "v1", toHub: { v1beta1: identity }, fromHub: { v1beta1: identity } },
    });
    const target = { service: { name: "op-webhook-service", namespace: "op-system" } };
    const serving = await localWebhookServing();
    try {
      const { validating } = webhookConfigurations("op", [widget], target);
      const crd = withConversion(Widget.crd(), widget, target);
      const [localCrd] = serving.rewrite([crd]);
      const [localValidating] = serving.rewrite([validating as object]);
      expect(localCrd?.spec.conversion?.webhook.clientConfig).toEqual({
        url: `https://127.0.0.1:${serving.port}/convert-shop-example-com-widget`,
        caBundle: serving.caBundle,
      });
      expect(localValidating).toMatchObject({
        webhooks: [
          {
            clientConfig: {
              url: `https://127.0.0.1:${serving.port}/validate-shop-example-com-v1-widget`,
              caBundle: serving.caBundle,
            },
          },
        ],
      });
      // The originals are untouched.
      expect(crd.spec.conversion?.webhook.clientConfig).toHaveProperty("service");
      expect(Buffer.from(serving.caBundle, "base64").toString()).toContain("BEGIN CERTIFICATE");
    } finally {
      serving.dispose();
    }
  });
});
