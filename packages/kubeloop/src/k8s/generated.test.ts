import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatted, generate, readCaptures } from "../cli/typegen/builtin.js";

const packageRoot = join(import.meta.dirname, "../..");

describe("kubeloop/k8s's generated modules", () => {
  it("are what the committed OpenAPI captures generate (`npm run generate:k8s` leaves no diff)", () => {
    const files = formatted(
      generate({ captures: readCaptures(join(packageRoot, "k8s-openapi")) }),
      "packages/kubeloop/src/k8s",
      join(packageRoot, "../.."),
    );
    expect(files.size).toBeGreaterThan(20);
    const stale = [...files].filter(
      ([path, text]) => readFileSync(join(import.meta.dirname, path), "utf8") !== text,
    );
    expect(stale.map(([path]) => path)).toEqual([]);
  }, 60_000);
});
