// What npm would publish, checked by the tools TypeScript library authors use (npm run lint:packages,
// part of npm run lint; offline once installed): `npm pack` of kubeloop and create-kubeloop, then
//   publint --strict           package.json against the packed files (exports, bin, files, types)
//   @arethetypeswrong/cli      every export's types under node16 (from ESM) and bundler resolution
// kubeloop is ESM only and needs Node ≥ 22.19, where require() of an ES module works, so attw's
// "CJS resolves to ESM" (a TypeScript view of CommonJS callers) and node10 resolution (TypeScript's
// legacy mode, which reads no `exports`) are not failures: `--profile node16 --ignore-rules
// cjs-resolves-to-esm`. create-kubeloop is a command only (a `bin`, nothing to import): attw must
// find no types in it, and publint checks the rest. Run after `npm run build`.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const bin = (name) => join(root, "node_modules/.bin", name);

/** `npm pack` of a workspace package into `dir`: the tarball's path and its list of files. */
export function pack(packageDir, dir) {
  const packed = spawnSync("npm", ["pack", "--json", "--pack-destination", dir], {
    cwd: packageDir,
    encoding: "utf8",
  });
  if (packed.status !== 0) throw new Error(`npm pack in ${packageDir}: ${packed.stderr}`);
  const [{ filename, files }] = JSON.parse(packed.stdout);
  return { tarball: join(dir, filename), files: files.map((f) => f.path) };
}

function run(command, args) {
  const result = spawnSync(command, args, { encoding: "utf8" });
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}` };
}

const checks = {
  kubeloop: (tarball) => [
    run(bin("publint"), ["run", tarball, "--strict"]),
    run(bin("attw"), [tarball, "--profile", "node16", "--ignore-rules", "cjs-resolves-to-esm"]),
  ],
  "create-kubeloop": (tarball) => {
    const attw = run(bin("attw"), [tarball, "--format", "json"]);
    const types = attw.ok ? JSON.parse(attw.output).analysis?.types : undefined;
    return [
      run(bin("publint"), ["run", tarball, "--strict"]),
      {
        ok: attw.ok && types === false,
        output: `attw: ${types === false ? "no types (a command only: nothing to import)" : attw.output}`,
      },
    ];
  },
};

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!existsSync(join(root, "packages/kubeloop/dist/index.d.ts"))) {
    console.error("packages/kubeloop/dist is missing: run `npm run build` first.");
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), "kubeloop-pack-"));
  let failed = false;
  try {
    for (const [name, check] of Object.entries(checks)) {
      const { tarball, files } = pack(join(root, "packages", name), dir);
      const results = check(tarball);
      const version = JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8")).version;
      for (const { ok, output } of results) {
        if (!ok) {
          failed = true;
          console.error(`${name}@${version}:\n${output}`);
        }
      }
      if (results.every((r) => r.ok))
        console.log(`${name}@${version}: publint and attw pass (${files.length} files)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (failed) process.exit(1);
}
