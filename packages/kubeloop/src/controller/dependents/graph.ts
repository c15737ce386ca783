/**
 * The order of a dependents declaration: children in waves, each child after everything it depends
 * on (children of one wave are independent and applied together), checked once when declared so a
 * typo or a cycle fails at start-up, not in a reconcile.
 */

export interface Node {
  readonly name: string;
  readonly dependsOn: readonly string[];
}

/**
 * The declared children in waves of creation: wave 0 depends on nothing, wave n on earlier waves
 * only. Throws on an unknown name or a cycle, naming it.
 */
export function creationWaves<N extends Node>(nodes: readonly N[]): N[][] {
  const byName = new Map(nodes.map((node) => [node.name, node]));
  for (const node of nodes) {
    for (const dependency of node.dependsOn) {
      if (!byName.has(dependency))
        throw new TypeError(
          `dependent "${node.name}" depends on "${dependency}", which is not declared (declared: ${[...byName.keys()].join(", ")})`,
        );
      if (dependency === node.name) throw new TypeError(`dependent "${node.name}" depends on itself`);
    }
  }
  return waves(nodes, (node) => node.dependsOn);
}

/**
 * The waves of deletion: a child goes after the children listed in `after(child)` are gone. By
 * default those are the children that depend on it (creation order reversed).
 */
export function deletionWaves<N extends Node>(
  nodes: readonly N[],
  deleteAfter: (node: N) => readonly string[] | undefined,
): N[][] {
  const dependents = (node: N) =>
    nodes.filter((other) => other.dependsOn.includes(node.name)).map((o) => o.name);
  return waves(nodes, (node) => deleteAfter(node) ?? dependents(node));
}

/** Kahn's algorithm, wave by wave, keeping declaration order inside a wave. */
function waves<N extends Node>(nodes: readonly N[], before: (node: N) => readonly string[]): N[][] {
  const placed = new Set<string>();
  const result: N[][] = [];
  let rest = [...nodes];
  while (rest.length > 0) {
    const wave = rest.filter((node) => before(node).every((name) => placed.has(name)));
    if (wave.length === 0) {
      throw new TypeError(
        `dependents ${rest.map((n) => `"${n.name}"`).join(", ")} wait for each other in a cycle: remove one of their dependsOn/deleteAfter entries`,
      );
    }
    for (const node of wave) placed.add(node.name);
    result.push(wave);
    rest = rest.filter((node) => !placed.has(node.name));
  }
  return result;
}
