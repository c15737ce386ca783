import Type from "typebox";
import { defineResource } from "../../resources/index.js";

/**
 * A kind written with kubeloop's own `defineResource` whose rules use what the Gateway API and
 * Kueue CRDs do not: `messageExpression`, `reason`, `fieldPath`, transition rules on map-list items
 * and map values, int-or-string at runtime, evaluation errors, property names CEL escapes, and
 * the Kubernetes libraries (lists, isIP, isCIDR, isURL, isQuantity, isSemver).
 */
const rule = (r: string, extra: Record<string, unknown> = {}) => ({ rule: r, ...extra });
const text = (r: string, message: string) =>
  Type.String({ maxLength: 64, "x-kubernetes-validations": [rule(r, { message })] });

export const RulesKind = defineResource({
  group: "cel.conformance.kubeloop.dev",
  version: "v1",
  kind: "Rules",
  spec: Type.Object(
    {
      min: Type.Integer(),
      max: Type.Integer({
        "x-kubernetes-validations": [rule("self >= oldSelf", { message: "max may not shrink" })],
      }),
      replicas: Type.Optional(Type.Integer()),
      mode: Type.Optional(Type.String({ maxLength: 16 })),
      speed: Type.Optional(Type.Integer()),
      ports: Type.Optional(
        Type.Array(
          Type.Object(
            { name: Type.String({ maxLength: 16 }), port: Type.Integer() },
            {
              "x-kubernetes-validations": [
                rule("self.port == oldSelf.port", { message: "a port's number is immutable" }),
              ],
            },
          ),
          {
            maxItems: 8,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [
              rule("self.all(p, self.exists_one(q, q.port == p.port))", { reason: "FieldValueDuplicate" }),
            ],
          },
        ),
      ),
      tags: Type.Optional(
        Type.Record(Type.String(), text("self.size() > 0", "tag values must not be empty"), {
          maxProperties: 8,
          "x-kubernetes-validations": [
            rule("oldSelf.all(k, k in self)", { message: "tags may not be removed" }),
          ],
        }),
      ),
      size: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
      address: Type.Optional(text("isIP(self)", "must be an IP address")),
      cidr: Type.Optional(text("isCIDR(self)", "must be a CIDR")),
      url: Type.Optional(text("isURL(self)", "must be a URL")),
      quantity: Type.Optional(text("isQuantity(self)", "must be a quantity")),
      version: Type.Optional(text("isSemver(self)", "must be a semantic version")),
      scores: Type.Optional(
        Type.Array(Type.Integer(), {
          maxItems: 8,
          "x-kubernetes-validations": [
            rule("self.isSorted()", { message: "must be sorted" }),
            rule("self.sum() <= 100", {
              messageExpression:
                "self.size() > 2 ? 'the scores add up past 100' : 'two scores add up past 100'",
            }),
          ],
        }),
      ),
      name: Type.Optional(
        Type.String({ maxLength: 64, "x-kubernetes-validations": [rule("self.matches('^[a-z.-]+$')")] }),
      ),
      items: Type.Optional(
        Type.Array(Type.String({ maxLength: 8 }), {
          maxItems: 4,
          "x-kubernetes-validations": [rule("self[0] == 'x'")],
        }),
      ),
      namespace: Type.Optional(Type.String({ maxLength: 64 })),
    },
    {
      "x-kubernetes-validations": [
        rule("self.min <= self.max", {
          message: "min must not exceed max",
          fieldPath: ".min",
          reason: "FieldValueForbidden",
        }),
        rule("!has(self.replicas) || self.replicas <= self.max * 2", {
          messageExpression: "'replicas exceed twice max in mode ' + (has(self.mode) ? self.mode : 'none')",
        }),
        rule("!has(self.speed) || self.mode == 'fast'", {
          message: "speed needs mode fast",
          fieldPath: ".speed",
          reason: "FieldValueRequired",
        }),
        rule("!has(self.size) || self.size > 0", { message: "size must be positive" }),
        rule("!has(self.replicas) || self.replicas != 7", { message: "not seven", fieldPath: ".replicas" }),
        rule("!has(self.__namespace__) || self.__namespace__ != 'kube-system'", {
          message: "not kube-system",
        }),
      ],
    },
  ),
  status: Type.Object({
    phase: Type.Optional(
      Type.String({
        maxLength: 16,
        "x-kubernetes-validations": [
          { rule: "self in ['Ready', 'Pending']", message: "phase is Ready or Pending" },
        ],
      }),
    ),
    observed: Type.Optional(
      Type.Integer({
        "x-kubernetes-validations": [
          { rule: "self >= 0", reason: "FieldValueForbidden", message: "never negative" },
        ],
      }),
    ),
  }),
});

/** A kind with embedded resources (`x-kubernetes-embedded-resource`): one free-form, one typed with rules. */
export const WRAPPER_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "wrappers.cel.conformance.kubeloop.dev" },
  spec: {
    group: "cel.conformance.kubeloop.dev",
    scope: "Namespaced" as const,
    names: { plural: "wrappers", singular: "wrapper", kind: "Wrapper" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                properties: {
                  template: {
                    type: "object",
                    "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true,
                  },
                  typed: {
                    type: "object",
                    "x-kubernetes-embedded-resource": true,
                    properties: {
                      spec: { type: "object", properties: { replicas: { type: "integer", maximum: 5 } } },
                    },
                    "x-kubernetes-validations": [
                      { rule: "self.kind == 'Thing'", message: "a Thing" },
                      { rule: "self.metadata.name != 'no'", message: "not no" },
                    ],
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};
