import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Metafile, OutputFile, Plugin } from "esbuild";
import { CliError } from "../errors.js";
import { LICENSES_FILE, licensesText, packageLicenses } from "./licenses.js";
import type { TarEntry } from "./tar.js";

/**
 * The operator itself, as the image holds it: an ES module bundled by esbuild from the project's
 * entry point (tree-shaken: only what the entry reaches, so no devDependency can come in), what it
 * imports dynamically split into chunks beside it (loaded at first use), with source maps (with
 * `NODE_OPTIONS=--enable-source-maps`, stack traces name the TypeScript sources), under /app.
 *
 * What cannot be bundled is shipped beside the bundle, as a package under /app/node_modules with
 * its production dependencies, and left as an import esbuild does not follow:
 * - native addons: a package holding a `binding.gyp` or a `.node` file (its compiled code is for
 *   one architecture: see {@link AppBuild.native});
 * - packages that read their own files at run time: kept code that uses `__dirname`,
 *   `__filename` or `import.meta.url`/`dirname`/`filename` in a package that holds files other
 *   than code (`.js`, `.json`, `.ts`, maps, docs), such as templates, WASM or certificates.
 * `createRequire(import.meta.url)(…)` is read as the `require` it is, so a package reading its
 * own package.json that way (kubeloop does, for its VERSION) is bundled with it.
 */

/** Where the operator lives in the image. */
export const APP_DIR = "/app";
export const BUNDLE = "main.mjs";
/** The bundle's chunks, loaded when the code that imports them dynamically first runs. */
export const CHUNKS = "chunks";
/** The entrypoint that sizes V8's heap from the container's memory limit, then runs the bundle (launcher.ts). */
export const LAUNCHER = "launcher.mjs";

export interface BundledPackage {
  name: string;
  version: string;
  /** The package's folder relative to the lockfile's folder: its key in package-lock.json. */
  path: string;
  license?: string;
}

export interface ExternalPackage extends BundledPackage {
  reason: "native addon" | "reads its files at run time";
}

export interface AppBuild {
  files: TarEntry[];
  /** Packages whose code is in the bundle. */
  bundled: BundledPackage[];
  /** Packages shipped beside it, with why. */
  external: ExternalPackage[];
  /** Whether any shipped package holds compiled code (then the image is for the build machine's architecture only). */
  native: boolean;
  /** THIRD-PARTY-LICENSES.txt: the licences of every bundled and shipped package (licenses.ts). */
  licenses: string;
}

const CODE_FILE =
  /\.(c|m)?(j|t)sx?$|\.json$|\.map$|\.md$|\.d\.ts$|(^|\/)(LICEN[CS]E|NOTICE|CHANGELOG|README)[^/]*$/i;
const OWN_FILES = /\b__dirname\b|\b__filename\b|import\.meta\.(url|dirname|filename)\b/;
const CREATE_REQUIRE = /\bcreateRequire\(\s*import\.meta\.url\s*\)\(/g;
/** `import("a literal")` as an expression (not `typeof import(…)`, a type). */
const DYNAMIC_IMPORT = /(?<!typeof\s*)(?<![\w$.])import\(\s*("[^"\n]+"|'[^'\n]+')\s*\)/g;
/**
 * In every chunk's banner: a namespace holding only `default` (a CommonJS module in a chunk) gets
 * that object's own properties as named exports too, as Node's CommonJS interop gives them.
 */
const INTEROP =
  'const __kubeloopInterop = (m) => { const d = m.default; return Object.keys(m).length === 1 && d !== null && (typeof d === "object" || typeof d === "function") ? { ...d, ...m } : m; };';

/** Bundles the project's entry point; `lockRoot` is the folder of the package-lock.json in use. */
export async function buildApp(root: string, entry: string, lockRoot: string): Promise<AppBuild> {
  const esbuild = await import("esbuild");
  const external = new Map<string, ExternalPackage>();
  for (let pass = 0; ; pass++) {
    const natives = new Map<string, string>();
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: [entry],
      outdir: root,
      entryNames: BUNDLE.replace(/\.mjs$/, ""),
      outExtension: { ".js": ".mjs" },
      // What the operator imports dynamically (certificates, YAML, metrics, tracing, client-node's
      // credential plugins) goes into chunks loaded at first use: one file would make every start
      // read, pre-parse and keep all of it (65 MiB RSS against 88 after import, docs/performance.md).
      splitting: true,
      chunkNames: `${CHUNKS}/[name]-[hash]`,
      bundle: true,
      write: false,
      metafile: true,
      platform: "node",
      format: "esm",
      target: `node${process.versions.node.split(".")[0]}`,
      sourcemap: "linked",
      sourcesContent: false,
      legalComments: "eof",
      minify: true,
      keepNames: true,
      logLevel: "silent",
      external: [...external.values()].map((p) => p.name),
      // A CommonJS dependency's require() of a Node built-in needs a require in an ES module.
      banner: {
        js: `import { createRequire as __kubeloopRequire } from "node:module"; const require = __kubeloopRequire(import.meta.url); ${INTEROP}`,
      },
      plugins: [nativeAddons(natives), sourceRewrites()],
    });
    const kept = keptInputs(result.metafile, root);
    let found = false;
    for (const [name, dir] of natives)
      found = addExternal(external, name, dir, lockRoot, "native addon") || found;
    for (const [dir, files] of kept) {
      if (
        !dir.includes(`${sep}node_modules${sep}`) ||
        !files.some((f) => OWN_FILES.test(readFileSync(f, "utf8")))
      )
        continue;
      if (!holdsData(dir)) continue;
      found =
        addExternal(external, packageJson(dir).name, dir, lockRoot, "reads its files at run time") || found;
    }
    if (found && pass < 5) continue;
    return appFiles(result.outputFiles, root, lockRoot, external, kept, await launcher(esbuild));
  }
}

/** The files of /app: the bundle and its chunks, the launcher, the external packages, the licences. */
function appFiles(
  outputFiles: OutputFile[],
  root: string,
  lockRoot: string,
  external: Map<string, ExternalPackage>,
  kept: Map<string, string[]>,
  launcherCode: Uint8Array,
): AppBuild {
  const files: TarEntry[] = [{ path: APP_DIR, type: "dir", mode: 0o555 }];
  if (outputFiles.some((out) => dirname(out.path) !== root))
    files.push({ path: `${APP_DIR}/${CHUNKS}`, type: "dir", mode: 0o555 });
  for (const out of outputFiles) {
    files.push({
      path: `${APP_DIR}/${relative(root, out.path)}`,
      type: "file",
      mode: 0o444,
      data: out.contents,
    });
  }
  files.push({ path: `${APP_DIR}/${LAUNCHER}`, type: "file", mode: 0o444, data: launcherCode });
  const shipped = [...external.values()].flatMap((p) => withDependencies(p, lockRoot));
  const seen = new Set<string>();
  for (const pkg of shipped) {
    if (seen.has(pkg.path)) continue;
    seen.add(pkg.path);
    files.push(...packageFiles(join(lockRoot, pkg.path), `${APP_DIR}/node_modules/${pkg.name}`));
  }
  const bundled = uniqueByPath(
    [...kept.keys()].map((dir) => describe(dir, lockRoot)).filter((p) => p.path !== relative(lockRoot, root)),
  );
  const licenses = licensesText(packageLicenses([...bundled, ...shipped], lockRoot));
  const data = new TextEncoder().encode(licenses);
  files.push({ path: `${APP_DIR}/${LICENSES_FILE}`, type: "file", mode: 0o444, data });
  return {
    files,
    bundled,
    external: [...external.values()],
    native: shipped.some((p) => isNative(join(lockRoot, p.path))),
    licenses,
  };
}

function addExternal(
  external: Map<string, ExternalPackage>,
  name: string,
  dir: string,
  lockRoot: string,
  reason: ExternalPackage["reason"],
): boolean {
  if (external.has(name)) return false;
  external.set(name, { ...describe(dir, lockRoot), reason });
  return true;
}

/** Marks a bare import whose package is a native addon as external, and remembers it. */
function nativeAddons(natives: Map<string, string>): Plugin {
  return {
    name: "kubeloop-native-addons",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === "native-check" || args.path.startsWith("node:")) return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: "native-check",
        });
        if (resolved.errors.length > 0 || !resolved.path || resolved.external) return undefined;
        const dir = packageRoot(resolved.path);
        if (!dir || !isNative(dir)) return undefined;
        natives.set(packageJson(dir).name, dir);
        return { path: args.path, external: true };
      });
    },
  };
}

/** launcher.ts as JavaScript: compiled beside this file in the package, TypeScript in the sources. */
async function launcher(esbuild: typeof import("esbuild")): Promise<Uint8Array> {
  const compiled = fileURLToPath(new URL("./launcher.js", import.meta.url));
  const file = existsSync(compiled) ? compiled : compiled.replace(/\.js$/, ".ts");
  const { code } = await esbuild.transform(readFileSync(file, "utf8"), {
    loader: file.endsWith(".ts") ? "ts" : "js",
    format: "esm",
    target: `node${process.versions.node.split(".")[0]}`,
  });
  return new TextEncoder().encode(code);
}

/**
 * Rewrites the sources esbuild reads: `createRequire(import.meta.url)(id)` becomes the `require(id)`
 * it is (esbuild bundles that), and `import("id")` gets the namespace Node would give: in a chunk, a
 * CommonJS package's dynamic import has only `default` (module.exports), where Node also gives
 * its named exports (`const { parse } = await import("yaml")`); {@link INTEROP} adds them.
 */
function sourceRewrites(): Plugin {
  return {
    name: "kubeloop-source-rewrites",
    setup(build) {
      build.onLoad({ filter: /\.(c|m)?(j|t)s$/ }, (args) => {
        const text = readFileSync(args.path, "utf8");
        if (!text.includes("createRequire(") && !text.includes("import(")) return undefined;
        const ext = extname(args.path);
        return {
          contents: text
            .replace(CREATE_REQUIRE, "require(")
            .replace(DYNAMIC_IMPORT, "(import($1).then(__kubeloopInterop))"),
          loader: ext.endsWith("ts") ? "ts" : "js",
          resolveDir: dirname(args.path),
        };
      });
    },
  };
}

/** Package folder → its input files that left code in the bundle. */
function keptInputs(metafile: Metafile, root: string): Map<string, string[]> {
  const kept = new Map<string, string[]>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      if (bytesInOutput === 0 || input.includes(":")) continue;
      const file = join(root, input);
      const dir = packageRoot(file);
      if (dir) kept.set(dir, [...(kept.get(dir) ?? []), file]);
    }
  }
  return kept;
}

function packageRoot(file: string): string | undefined {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json")) && packageJson(dir).name) return dir;
  }
  return undefined;
}

interface PackageJson {
  name: string;
  version: string;
  license?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

function packageJson(dir: string): PackageJson {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
}

function describe(dir: string, lockRoot: string): BundledPackage {
  const json = packageJson(dir);
  return {
    name: json.name,
    version: json.version,
    path: relative(lockRoot, dir).split(sep).join("/"),
    ...(typeof json.license === "string" ? { license: json.license } : {}),
  };
}

function uniqueByPath<T extends { path: string }>(items: T[]): T[] {
  return [...new Map(items.map((item) => [item.path, item])).values()].sort((a, b) =>
    a.path < b.path ? -1 : 1,
  );
}

/** A package and, recursively, the production dependencies Node would resolve from it. */
function withDependencies(pkg: BundledPackage, lockRoot: string): BundledPackage[] {
  const out = new Map<string, BundledPackage>();
  const visit = (dir: string) => {
    const described = describe(dir, lockRoot);
    if (out.has(described.path)) return;
    out.set(described.path, described);
    const json = packageJson(dir);
    for (const name of Object.keys({ ...json.dependencies, ...json.optionalDependencies })) {
      const found = installed(name, dir);
      if (found) visit(found);
      else if (!json.optionalDependencies?.[name]) {
        throw new CliError(`${json.name} depends on ${name}, which is not installed: run npm install first`);
      }
    }
  };
  visit(join(lockRoot, pkg.path));
  return [...out.values()];
}

/** Where Node finds package `name` from `dir`: the nearest node_modules/<name> on the way up. */
function installed(name: string, dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const candidate = join(at, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(at) === at) return undefined;
  }
}

function walk(dir: string, skipNodeModules = true): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" && skipNodeModules) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...walk(path, skipNodeModules));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

function isNative(dir: string): boolean {
  return existsSync(join(dir, "binding.gyp")) || walk(dir).some((file) => file.endsWith(".node"));
}

function holdsData(dir: string): boolean {
  return walk(dir).some((file) => !CODE_FILE.test(relative(dir, file).split(sep).join("/")));
}

/** A package's files (not its node_modules), read-only; executables keep their x bit. */
function packageFiles(dir: string, to: string): TarEntry[] {
  return walk(dir).map((file) => ({
    path: `${to}/${relative(dir, file).split(sep).join("/")}`,
    type: "file",
    mode: statSync(file).mode & 0o111 ? 0o555 : 0o444,
    data: readFileSync(file),
  }));
}
