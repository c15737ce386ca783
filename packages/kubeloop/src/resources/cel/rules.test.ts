import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { checkRules } from "./rules.js";
import { validateRules } from "./validator.js";

type Schema = Record<string, unknown>;
const crdDir = new URL("../../testing/memory/testdata/crds/", import.meta.url);
const realCrds = readdirSync(crdDir).map((file) => ({
  file,
  crd: parse(readFileSync(new URL(file, crdDir), "utf8")) as {
    spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
  },
}));

const spec = (properties: Schema, rules: Schema[]): Schema => ({
  type: "object",
  properties: { spec: { type: "object", properties, "x-kubernetes-validations": rules } },
});

describe("checkRules (the type check `kubeloop generate` runs)", () => {
  it("accepts every rule of Gateway API's and Kueue's CRDs, which kube-apiserver compiled", () => {
    const problems = realCrds.flatMap(({ file, crd }) =>
      crd.spec.versions.flatMap((v) => checkRules(v.schema.openAPIV3Schema).map((p) => ({ file, ...p }))),
    );
    expect(problems).toEqual([]);
  });

  it("names a field the schema does not have, an operator without an overload, a non-bool rule, an unknown function", () => {
    const schema = spec(
      {
        port: { type: "integer" },
        name: { type: "string" },
        tags: { type: "array", items: { type: "string" } },
      },
      [
        { rule: "self.prot > 0" },
        { rule: "self.port == 'http'" },
        { rule: "self.name + 1 == 'x'" },
        { rule: "self.port" },
        { rule: "frobnicate(self.name)" },
        { rule: "self.tags.all(t, t.size() < 10) && self.name.startsWith('a') && self.port in [1, 2]" },
        { rule: "self.port > 0", messageExpression: "self.port" },
      ],
    );
    expect(checkRules(schema).map((p) => `${p.path}: ${p.reason}`)).toEqual([
      "spec: undefined field 'prot'",
      "spec: found no matching overload for '_==_' applied to '(int, string)'",
      "spec: found no matching overload for '_+_' applied to '(string, int)'",
      "spec: cel expression must evaluate to a bool",
      "spec: undeclared reference to 'frobnicate' (in container '')",
      "spec: messageExpression must evaluate to a string",
    ]);
  });

  it("accepts fields of preserve-unknown-fields and int-or-string values (dyn), and escaped names", () => {
    const schema = spec(
      {
        free: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
        size: { "x-kubernetes-int-or-string": true },
        namespace: { type: "string" },
        "a-b": { type: "string" },
      },
      [
        {
          rule: "self.free.anything.goes == 1 && self.size > 0 && self.__namespace__ != '' && self.a__dash__b != ''",
        },
      ],
    );
    expect(checkRules(schema)).toEqual([]);
  });
});

describe("validateRules", () => {
  const immutable = spec(
    {
      limit: { type: "integer", "x-kubernetes-validations": [{ rule: "self <= 10", message: "at most 10" }] },
      other: { type: "string" },
    },
    [],
  );

  it("ratchets: an invalid value left unchanged by an update passes, a changed one fails", () => {
    const old = { spec: { limit: 20, other: "a" } };
    expect(validateRules({ spec: { limit: 20 } }, immutable)).toEqual([
      { type: "FieldValueInvalid", field: "spec.limit", message: "Invalid value: 20: at most 10" },
    ]);
    expect(validateRules({ spec: { limit: 20, other: "b" } }, immutable, { old })).toEqual([]);
    expect(validateRules({ spec: { limit: 21, other: "b" } }, immutable, { old })).toHaveLength(1);
  });

  it("skips a transition rule on create and where the old value cannot be correlated (an atomic list's items)", () => {
    const schema = spec(
      {
        items: {
          type: "array",
          items: {
            type: "object",
            properties: { n: { type: "integer" } },
            "x-kubernetes-validations": [{ rule: "self.n == oldSelf.n" }],
          },
        },
      },
      [],
    );
    expect(validateRules({ spec: { items: [{ n: 1 }] } }, schema)).toEqual([]);
    expect(
      validateRules({ spec: { items: [{ n: 2 }] } }, schema, { old: { spec: { items: [{ n: 1 }] } } }),
    ).toEqual([]);
  });
});
