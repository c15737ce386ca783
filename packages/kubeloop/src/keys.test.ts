// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the test data are source lines that hold templates
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

// Identity has one home (client/object-ref.ts): `keyOfRef` makes `namespace/name`, `refOfKey`
// parses it, `kindKeyOf` names a kind, `groupOf` splits an apiVersion. A key made by hand elsewhere
// drifts (a cluster-scoped object keyed `/name`, a kind keyed without its version), so the library's
// sources are searched for the shapes a hand-made one takes.

const src = import.meta.dirname;
const HOME = "client/object-ref.ts";

/** Not object keys, each for a reason. */
const ALLOWED: Record<string, string> = {
  // The shard ring hashes `group/Kind/namespace/name`: its format decides which replica owns an
  // object, so it must not change with the key function.
  "manager/sharding/ring.ts": "the ring's hash input",
  // A chaos target's display name (`namespace/pod`), in messages only.
  "testing/faults/runtime.ts": "a pod target's display name",
};

/** A template made only of interpolations joined by `/`: `${a}/${b}`, `${a}/${b}/${c}`. */
const JOINED = /`(\$\{[^`}]*\}\/)+\$\{[^`}]*\}`/;
/** What such a template joins when it is a key: a namespace, or an apiVersion with a kind. */
const IDENTITY = (joined: string) =>
  /namespace|\bns\b/i.test(joined) || (/apiVersion/i.test(joined) && /kind/i.test(joined));

const SHAPES: { name: string; matches: (line: string) => boolean }[] = [
  {
    name: "a key template (`${namespace}/${name}`, `${apiVersion}/${kind}`)",
    matches: (line) => IDENTITY(line.match(JOINED)?.[0] ?? ""),
  },
  {
    name: "a key split on `/`",
    matches: (line) => /\bkey\w*\s*\.\s*(split|indexOf|lastIndexOf)\(\s*"\/"/i.test(line),
  },
  {
    name: "an apiVersion split on `/`",
    matches: (line) => /apiVersion\w*\)?\s*\.\s*(split|indexOf|includes)\(\s*"\/"/i.test(line),
  },
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "k8s" ? [] : sources(path); // k8s/: generated types
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** `file:line: shape` for every line of a source that makes a key by hand. */
export function handMadeKeys(files: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [file, text] of Object.entries(files)) {
    if (file === HOME || ALLOWED[file]) continue;
    text.split("\n").forEach((line, i) => {
      for (const shape of SHAPES) if (shape.matches(line)) found.push(`${file}:${i + 1}: ${shape.name}`);
    });
  }
  return found;
}

describe("object identity", () => {
  it("has no key made by hand outside client/object-ref.ts", () => {
    const files = Object.fromEntries(sources(src).map((f) => [relative(src, f), readFileSync(f, "utf8")]));
    expect(Object.keys(files).length).toBeGreaterThan(100);
    expect(handMadeKeys(files)).toEqual([]);
  });

  it("finds each shape a hand-made key takes", () => {
    const found = handMadeKeys({
      "a.ts": "const key = `${object.metadata.namespace}/${name}`;",
      "b.ts": "const type = `${t.apiVersion}/${t.kind}`;",
      "c.ts": 'const [ns, name] = key.split("/");',
      "d.ts": 'const group = type.apiVersion.includes("/") ? "x" : "";',
      "d2.ts": 'const group = String(o.apiVersion).split("/")[0];',
      "e.ts": "throw new Error(`Secret ${namespace}/${name} is missing`); // a message, not a key",
      "f.ts": "const path = `${base}/${resource}`; // a path, not a key",
      [HOME]: "return `${ref.namespace}/${ref.name}`;",
    });
    expect(found).toEqual([
      "a.ts:1: a key template (`${namespace}/${name}`, `${apiVersion}/${kind}`)",
      "b.ts:1: a key template (`${namespace}/${name}`, `${apiVersion}/${kind}`)",
      "c.ts:1: a key split on `/`",
      "d.ts:1: an apiVersion split on `/`",
      "d2.ts:1: an apiVersion split on `/`",
    ]);
  });
});
