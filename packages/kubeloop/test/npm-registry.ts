import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultAssetsRoot } from "../src/testing/assets/index.js";
import { freePorts } from "../src/testing/ports.js";
import { pollUntil } from "../src/util/index.js";

/** The verdaccio release the published-package test serves kubeloop from. */
export const VERDACCIO_VERSION = "6.10.4";

/**
 * verdaccio, installed once into the asset cache with npm. Its dependency tree asks for the
 * `node-fetch@cjs` dist-tag, which registry mirrors do not always carry: the tag's version is pinned.
 */
export function verdaccioEntry(root = defaultAssetsRoot()): string {
  const dir = join(root, `verdaccio-${VERDACCIO_VERSION}`);
  const entry = join(dir, "node_modules/verdaccio/bin/verdaccio");
  if (existsSync(entry)) return entry;
  mkdirSync(dir, { recursive: true });
  const manifest = {
    name: "kubeloop-verdaccio",
    private: true,
    dependencies: { verdaccio: VERDACCIO_VERSION },
    overrides: { "node-fetch": "2.7.0" },
  };
  writeFileSync(join(dir, "package.json"), JSON.stringify(manifest, null, 2));
  const installed = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--omit=dev"], {
    cwd: dir,
    encoding: "utf8",
    timeout: 600_000,
  });
  if (installed.status !== 0 || !existsSync(entry))
    throw new Error(
      `npm install verdaccio@${VERDACCIO_VERSION} into ${dir} failed (it needs the npm registry): ${(installed.error?.message ?? installed.stderr).slice(-2000)}`,
    );
  return entry;
}

/** A verdaccio on loopback: kubeloop's packages published to it, everything else proxied. */
export interface NpmRegistry {
  url: string;
  /** An npm user config naming this registry and a publisher's token: `npm_config_userconfig`. */
  userconfig: string;
  /** `npm publish` of a package tarball (`npm pack`'s output), as the `latest` version. */
  publish(tarball: string): void;
  stop(): Promise<void>;
}

/**
 * Starts verdaccio in `dir` on a free loopback port. kubeloop and create-kubeloop are served only
 * from what is published here (never fetched from the upstream registry); any other package is
 * proxied to the registry npm is configured with, through npm's cache.
 */
export async function startNpmRegistry(parent: string): Promise<NpmRegistry> {
  const entry = verdaccioEntry();
  const dir = mkdtempSync(join(parent, "registry-"));
  const [port] = await freePorts(1);
  const url = `http://127.0.0.1:${port}/`;
  const upstream = spawnSync("npm", ["config", "get", "registry"], { encoding: "utf8" }).stdout.trim();
  const local = "    access: $all\n    publish: $authenticated\n";
  writeFileSync(
    join(dir, "config.yaml"),
    [
      `storage: ${join(dir, "storage")}`,
      `auth:\n  htpasswd:\n    file: ${join(dir, "htpasswd")}\n    max_users: 1`,
      `uplinks:\n  upstream:\n    url: ${upstream || "https://registry.npmjs.org/"}`,
      `packages:\n  'kubeloop':\n${local}  'create-kubeloop':\n${local}  '**':\n${local}    proxy: upstream`,
      "log: { type: stdout, format: json, level: warn }",
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(
    process.execPath,
    [entry, "--config", join(dir, "config.yaml"), "--listen", `127.0.0.1:${port}`],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await pollUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`verdaccio exited: ${log}`);
        return (await fetch(`${url}-/ping`).catch(() => undefined))?.ok === true;
      },
      { timeoutMs: 60_000, intervalMs: 250, message: "verdaccio to answer /-/ping" },
    );
    // npm publish needs a token: the first user registers and gets one (max_users 1).
    const added = await fetch(`${url}-/user/org.couchdb.user:publisher`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "publisher", password: "publisher-password" }),
    });
    const { token } = (await added.json()) as { token?: string };
    if (!token) throw new Error(`verdaccio gave no token (${added.status})`);
    const userconfig = join(dir, "npmrc");
    writeFileSync(userconfig, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
    return {
      url,
      userconfig,
      publish(tarball) {
        const published = spawnSync(
          "npm",
          ["publish", tarball, "--tag", "latest", "--userconfig", userconfig],
          {
            encoding: "utf8",
            timeout: 120_000,
          },
        );
        if (published.status !== 0) throw new Error(`npm publish ${tarball}: ${published.stderr}`);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * `npm pack`'s tarball of the package in `dir`, at `version` (a prerelease unique to the run, so no
 * npm or npx cache can hand out an older build under the same name), its dependencies on
 * `pinned` packages rewritten to that version too.
 */
export function packAt(dir: string, into: string, version: string, pinned: string[] = []): string {
  const work = mkdtempSync(join(into, "pack-"));
  const packed = spawnSync("npm", ["pack", "--pack-destination", work, "--json"], {
    cwd: dir,
    encoding: "utf8",
  });
  if (packed.status !== 0) throw new Error(`npm pack in ${dir}: ${packed.stderr}`);
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  const run = (args: string[]) => {
    const tar = spawnSync("tar", args, { cwd: work, encoding: "utf8" });
    if (tar.status !== 0) throw new Error(`tar ${args.join(" ")}: ${tar.stderr}`);
  };
  run(["xzf", filename]);
  const path = join(work, "package/package.json");
  const manifest = JSON.parse(readFileSync(path, "utf8")) as {
    name: string;
    version: string;
    dependencies?: Record<string, string>;
  };
  manifest.version = version;
  for (const name of pinned) if (manifest.dependencies?.[name]) manifest.dependencies[name] = version;
  writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`);
  const tarball = join(into, `${manifest.name}-${version}.tgz`);
  run(["czf", tarball, "package"]);
  rmSync(work, { recursive: true, force: true });
  return tarball;
}
