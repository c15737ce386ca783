import Type from "typebox";

/**
 * Schemas that recur in custom resources, ready to put in a `defineResource` spec or status.
 *
 * @example
 * ```ts
 * status: Type.Object({ conditions: Type.Optional(Conditions()), observedGeneration: Type.Optional(ObservedGeneration()) })
 * ```
 */

/** `status.conditions` as Kubernetes API conventions define them (metav1.Condition), a map keyed by type. */
export function Conditions() {
  return Type.Array(
    Type.Object({
      type: Type.String({ description: "The condition's kind, e.g. Ready." }),
      status: Type.Union([Type.Literal("True"), Type.Literal("False"), Type.Literal("Unknown")], {
        description: "Whether the condition holds: True, False or Unknown.",
      }),
      reason: Type.String({ description: "A CamelCase reason for the last transition." }),
      message: Type.String({ description: "A human-readable explanation." }),
      lastTransitionTime: Type.String({ format: "date-time", description: "When the status last changed." }),
      observedGeneration: Type.Optional(
        Type.Integer({ format: "int64", description: "The generation it was computed from." }),
      ),
    }),
    {
      description: "The latest observations of the object's state.",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
    },
  );
}

/** The `metadata.generation` the status was computed from. */
export function ObservedGeneration() {
  return Type.Integer({ format: "int64", description: "The generation of the spec this status describes." });
}
