import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { anchorsIn, toYaml, toYamlDocuments } from "./yaml.js";

const REPO = resolve(import.meta.dirname, "../../../..");
const GENERATED = ["examples/nginx", "examples/pgdatabase", "examples/sampledb"].flatMap((example) =>
  ["config", "charts", "bundle"].map((dir) => join(REPO, example, dir)),
);

function yamlFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry) && !path.includes("/templates/") ? [path] : [];
  });
}

describe("toYaml", () => {
  it("writes an object used twice in full instead of as an anchor and an alias", () => {
    const labels = { app: "x" };
    const text = toYamlDocuments([{ metadata: { labels }, spec: { selector: { matchLabels: labels } } }]);
    expect(text).not.toMatch(/[&*]a1/);
    expect(text.match(/app: x/g)).toHaveLength(2);
    expect(anchorsIn(text)).toEqual([]);
  });

  it("anchorsIn finds what the yaml library writes by default", () => {
    expect(anchorsIn("a: &x { b: 1 }\nc: *x\n")).toEqual(["&x", "*x"]);
    expect(anchorsIn(toYaml({ a: 1 }))).toEqual([]);
  });
});

describe("generated files", () => {
  it("use no YAML anchors or aliases (config/, the chart's values and the bundle)", () => {
    const files = GENERATED.flatMap(yamlFiles);
    expect(files.length).toBeGreaterThan(10);
    const offenders = files
      .map((file) => [relative(REPO, file), anchorsIn(readFileSync(file, "utf8"))] as const)
      .filter(([, found]) => found.length > 0);
    expect(offenders).toEqual([]);
  });
});
