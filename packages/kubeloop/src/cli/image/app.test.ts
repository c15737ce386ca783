import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildApp } from "./app.js";
import { buildImage } from "./build.js";

// A project of its own, with three dependencies: one plain (bundled), one native addon (a
// binding.gyp and a .node file), one that reads a template beside its code at run time.

const root = mkdtempSync(join(tmpdir(), "kubeloop-app-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function write(path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

const pkg = (name: string, extra: object = {}) =>
  JSON.stringify({ name, version: "1.0.0", main: "index.js", ...extra });
write(
  "package.json",
  JSON.stringify({ name: "fixture", version: "0.1.0", type: "module", dependencies: {} }),
);
write(
  "src/main.ts",
  'import { plain } from "plain";\nimport native from "native";\nimport { page } from "templated";\nconsole.log(plain(), native, page());\n',
);
write("node_modules/plain/package.json", pkg("plain", { dependencies: { helper: "1.0.0" } }));
write("node_modules/plain/index.js", 'exports.plain = () => require("helper").help();\n');
write("node_modules/helper/package.json", pkg("helper"));
write("node_modules/helper/index.js", 'exports.help = () => "help";\n');
write("node_modules/native/package.json", pkg("native", { dependencies: { helper: "1.0.0" } }));
write("node_modules/native/binding.gyp", "{}\n");
write("node_modules/native/build/Release/native.node", "\u007fELF not really\n");
write("node_modules/native/index.js", 'module.exports = require("./build/Release/native.node");\n');
write("node_modules/templated/package.json", pkg("templated"));
write("node_modules/templated/page.html", "<p>hi</p>\n");
write(
  "node_modules/templated/index.js",
  'const { readFileSync } = require("node:fs");\nexports.page = () => readFileSync(__dirname + "/page.html", "utf8");\n',
);

describe("the bundled operator", () => {
  it("bundles plain dependencies, and ships native addons and packages that read their own files beside the bundle", async () => {
    const app = await buildApp(root, join(root, "src/main.ts"), root);
    expect(app.bundled.map((p) => p.name)).toEqual(["helper", "plain"]);
    expect(app.external.map((p) => [p.name, p.reason])).toEqual([
      ["native", "native addon"],
      ["templated", "reads its files at run time"],
    ]);
    expect(app.native).toBe(true);
    const paths = app.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "/app/main.mjs",
        "/app/main.mjs.map",
        "/app/node_modules/native/build/Release/native.node",
        "/app/node_modules/native/binding.gyp",
        // a shipped package's production dependencies come with it
        "/app/node_modules/helper/index.js",
        "/app/node_modules/templated/page.html",
      ]),
    );
    expect(paths.some((p) => p.startsWith("/app/node_modules/plain/"))).toBe(false);
    const bundle = Buffer.from(app.files.find((f) => f.path === "/app/main.mjs")?.data ?? []).toString();
    expect(bundle).toMatch(/from\s*"native"|require\("native"\)/);
  });

  it("leaves what is imported dynamically out of main.mjs, in a chunk loaded at first use", async () => {
    const lazy = mkdtempSync(join(tmpdir(), "kubeloop-app-lazy-"));
    try {
      const put = (path: string, text: string) => {
        mkdirSync(dirname(join(lazy, path)), { recursive: true });
        writeFileSync(join(lazy, path), text);
      };
      put("package.json", JSON.stringify({ name: "lazy-fixture", version: "0.1.0", type: "module" }));
      put(
        "src/main.ts",
        'import { eager } from "eager";\nconsole.log(eager(), typeof globalThis.heavyLoaded);\nconst { heavy }: typeof import("heavy") = await import("heavy");\nconsole.log(heavy(), typeof globalThis.heavyLoaded);\n',
      );
      put("node_modules/eager/package.json", pkg("eager"));
      put("node_modules/eager/index.js", 'exports.eager = () => "eager";\n');
      // CommonJS, imported by name as Node allows (`const { parse } = await import("yaml")`).
      put("node_modules/heavy/package.json", pkg("heavy"));
      put(
        "node_modules/heavy/index.js",
        'globalThis.heavyLoaded = true;\nexports.heavy = () => "heavy code";\n',
      );
      const app = await buildApp(lazy, join(lazy, "src/main.ts"), lazy);
      const text = (path: string) =>
        Buffer.from(app.files.find((f) => f.path === path)?.data ?? []).toString();
      const chunks = app.files.filter((f) => /^\/app\/chunks\/.*\.mjs$/.test(f.path));
      expect(text("/app/main.mjs")).not.toContain("heavy code");
      expect(
        chunks.some((f) =>
          Buffer.from(f.data ?? [])
            .toString()
            .includes("heavy code"),
        ),
      ).toBe(true);
      // Written out as the image holds them, they run: the chunk is loaded by the dynamic import.
      const out = join(lazy, "out");
      for (const file of app.files) {
        const path = join(out, file.path);
        if (file.type === "dir") mkdirSync(path, { recursive: true });
        else writeFileSync(path, file.data ?? new Uint8Array());
      }
      expect(execFileSync(process.execPath, [join(out, "app/main.mjs")], { encoding: "utf8" })).toBe(
        "eager undefined\nheavy code boolean\n",
      );
    } finally {
      rmSync(lazy, { recursive: true, force: true });
    }
  });

  it("refuses an image for the other architecture when a native addon is shipped, and says why", async () => {
    const other = process.arch === "arm64" ? "amd64" : "arm64";
    await expect(buildImage({ dir: root, platforms: [other] })).rejects.toThrow(
      `native is a native addon, compiled for this machine (${other === "arm64" ? "amd64" : "arm64"}): an image for ${other} would not run`,
    );
  });
});
