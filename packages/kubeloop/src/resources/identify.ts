import type { KubeObject, ResourceType } from "../client/index.js";

export { groupOf, versionOf } from "../client/internal.js";

/**
 * The type, name and namespace to write an object to. Objects in list responses of built-in kinds
 * (and so in caches) lack apiVersion and kind: a helper that needs them says so, instead of the
 * client's generic message.
 */
export function identify(
  object: KubeObject,
  caller: string,
): { type: ResourceType; name: string; namespace: string | undefined } {
  const { apiVersion, kind } = object;
  const name = object.metadata?.name;
  if (!apiVersion || !kind) {
    throw new TypeError(
      `${caller}: the object needs apiVersion and kind (list responses of built-in kinds leave them out; set them)`,
    );
  }
  if (!name) throw new TypeError(`${caller}: the ${kind} needs metadata.name`);
  return { type: { apiVersion, kind }, name, namespace: object.metadata?.namespace };
}
