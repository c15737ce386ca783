import Type from "typebox";
import { describe, expect, it } from "vitest";
import { defineResource } from "../../resources/define-resource.js";
import { NotEmulated } from "./errors.js";
import { validate } from "./validate.js";

const Range = defineResource({
  group: "example.com",
  version: "v1",
  kind: "Range",
  spec: Type.Object(
    {
      min: Type.Integer(),
      max: Type.Integer({
        "x-kubernetes-validations": [{ rule: "self >= oldSelf", message: "max may not shrink" }],
      }),
      unit: Type.Optional(Type.String({ maxLength: 3 })),
    },
    { "x-kubernetes-validations": [{ rule: "self.min <= self.max", message: "min must not exceed max" }] },
  ),
});
const range = (spec: Record<string, unknown>) => ({
  apiVersion: "example.com/v1",
  kind: "Range",
  metadata: { name: "r" },
  spec,
});

describe("validate (a CRD's rules in a plain unit test)", () => {
  it("accepts a valid object and names each failed rule's field and message", () => {
    expect(validate(Range, range({ min: 1, max: 3 }))).toEqual([]);
    expect(validate(Range, range({ min: 3, max: 1 }))).toEqual([
      { type: "FieldValueInvalid", field: "spec", message: "Invalid value: min must not exceed max" },
    ]);
  });

  it("runs transition rules when given the old object", () => {
    expect(validate(Range, range({ min: 1, max: 2 }), range({ min: 1, max: 5 }))).toEqual([
      { type: "FieldValueInvalid", field: "spec.max", message: "Invalid value: 2: max may not shrink" },
    ]);
    expect(validate(Range, range({ min: 1, max: 2 }))).toEqual([]);
  });

  it("reports schema errors as the server does, and then does not run the rules", () => {
    expect(validate(Range, range({ min: 3, max: 1, unit: "parsecs" }))).toEqual([
      { type: "FieldValueTooLong", field: "spec.unit", message: "Too long: may not be more than 3 bytes" },
      {
        type: "FieldValueInvalid",
        field: "<nil>",
        message:
          "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
      },
    ]);
  });

  it("refuses a rule it cannot evaluate faithfully, naming it", () => {
    const Quantities = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Quantities",
      spec: Type.Object(
        { size: Type.String() },
        { "x-kubernetes-validations": [{ rule: "quantity(self.size).isInteger()" }] },
      ),
    });
    expect(() => validate(Quantities, range({ size: "1Gi" }))).toThrow(NotEmulated);
    expect(() => validate(Quantities, range({ size: "1Gi" }))).toThrow(
      '"quantity(self.size).isInteger()" at spec',
    );
  });
});
