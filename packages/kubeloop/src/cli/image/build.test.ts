import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BuiltImage, buildImage } from "./build.js";
import { layoutTar, readLayout } from "./layout.js";
import type { Layer } from "./oci.js";
import { spdxDocument } from "./sbom.js";
import { readTar, type TarEntry } from "./tar.js";

// The nginx example's image, built twice: once with the shared cache (warm when other runs filled
// it), once with an empty cache of its own, so that the base and runtime layers are made again from
// the downloaded packages and must still come out the same.

const REPO = join(import.meta.dirname, "../../../../..");
const NGINX = join(REPO, "examples/nginx");
const NODE_VERSION = (
  JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { devDependencies: { node: string } }
).devDependencies.node;
const scratch = mkdtempSync(join(tmpdir(), "kubeloop-image-"));
let image: BuiltImage;
let again: BuiltImage;

beforeAll(async () => {
  image = await buildImage({ dir: NGINX, name: "127.0.0.1:5000/nginx-operator:test" });
  again = await buildImage({
    dir: NGINX,
    name: "127.0.0.1:5000/nginx-operator:test",
    cache: join(scratch, "cache"),
  });
}, 900_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const files = (layers: readonly Layer[]): TarEntry[] =>
  layers.flatMap((l) => readTar(gunzipSync(l.blob.bytes)));
const platform = (arch: "amd64" | "arm64") => {
  const found = image.platforms.find((p) => p.platform.architecture === arch);
  if (!found) throw new Error(`no ${arch} image`);
  return found;
};
const configOf = (arch: "amd64" | "arm64") =>
  JSON.parse(platform(arch).config.bytes.toString()) as {
    architecture: string;
    config: { User: string; Entrypoint: string[]; Env: string[]; Labels: Record<string, string> };
    rootfs: { diff_ids: string[] };
    history: object[];
  };

describe("kubeloop build (the nginx example)", () => {
  it("gives the same digest when the same tree is built twice, from a cold cache the second time", () => {
    expect(again.digest).toBe(image.digest);
    expect(layoutTar(again).equals(layoutTar(image))).toBe(true);
  });

  it("writes a valid OCI layout: the index for amd64 and arm64 and every blob it reaches, under its digest", () => {
    const { index, blobs } = readLayout(layoutTar(image));
    expect(index.manifests[0]?.digest).toBe(image.digest);
    const top = JSON.parse(String(blobs.get(image.digest))) as {
      manifests: { digest: string; platform: object }[];
    };
    expect(top.manifests.map((m) => m.platform)).toEqual([
      { architecture: "amd64", os: "linux" },
      { architecture: "arm64", os: "linux" },
    ]);
    for (const entry of top.manifests) {
      const manifest = JSON.parse(String(blobs.get(entry.digest))) as {
        config: { digest: string };
        layers: { digest: string }[];
      };
      for (const d of [manifest.config.digest, ...manifest.layers.map((l) => l.digest)])
        expect(blobs.has(d)).toBe(true);
    }
  });

  it("has no shell and no package manager: nothing in bin/, sbin/ or usr/bin/", () => {
    for (const arch of ["amd64", "arm64"] as const) {
      const paths = files(platform(arch).layers).map((e) => e.path);
      expect(paths).toContain("usr/local/bin/node");
      expect(paths.filter((p) => /^(usr\/)?s?bin\/./.test(p))).toEqual([]);
      expect(paths.filter((p) => /(^|\/)(sh|bash|dash|busybox|apt|apt-get|dpkg|npm|npx)$/.test(p))).toEqual(
        [],
      );
    }
  });

  it("runs as the non-root user 65532, who can write /tmp and nothing of the operator's", () => {
    const config = configOf("amd64");
    expect(config.config.User).toBe("65532:65532");
    const entries = files(platform("amd64").layers);
    const passwd = Buffer.from(entries.find((e) => e.path === "etc/passwd")?.data ?? []).toString();
    expect(passwd).toContain("nonroot:x:65532:65532:");
    expect(entries.find((e) => e.path === "tmp")).toMatchObject({ type: "dir", mode: 0o1777 });
    const app = entries.filter((e) => e.path.startsWith("app/"));
    expect(app.length).toBeGreaterThan(2);
    for (const entry of app)
      expect({ path: entry.path, uid: entry.uid, writable: (entry.mode & 0o022) !== 0 }).toEqual({
        path: entry.path,
        uid: 0,
        writable: false,
      });
  });

  it("runs the bundle through the heap-sizing launcher, its source maps shipped, and labels the image from package.json", () => {
    const config = configOf("arm64");
    expect(config.config.Entrypoint).toEqual(["/usr/local/bin/node", "/app/launcher.mjs", "/app/main.mjs"]);
    expect(config.config.Env).toContain("MALLOC_ARENA_MAX=2");
    expect(config.config.Labels).toMatchObject({
      "org.opencontainers.image.title": "nginx-operator",
      "org.opencontainers.image.version": "0.1.0",
    });
    const paths = files(platform("amd64").layers).map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(["app/main.mjs", "app/main.mjs.map", "app/launcher.mjs"]));
    // What the operator imports dynamically (here yaml, for a kubeconfig file) is a chunk beside it.
    expect(paths.filter((p) => /^app\/chunks\/.+\.mjs$/.test(p)).length).toBeGreaterThan(0);
  });

  it("holds no devDependency: not in the bundle's sources, not beside it, not in the SBOM", () => {
    const devDependencies = [REPO, NGINX, join(REPO, "packages/kubeloop")].flatMap((dir) =>
      Object.keys(
        (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { devDependencies?: object })
          .devDependencies ?? {},
      ),
    );
    expect(devDependencies).toEqual(expect.arrayContaining(["vitest", "typescript", "@biomejs/biome"]));
    const entries = files(platform("amd64").layers);
    // The bundle's and its chunks' source maps: every source that left code in the image.
    const map = {
      sources: entries
        .filter((e) => /^app\/(chunks\/)?[^/]+\.mjs\.map$/.test(e.path))
        .flatMap((e) => (JSON.parse(Buffer.from(e.data ?? []).toString()) as { sources: string[] }).sources),
    };
    expect(map.sources.some((s) => s.includes("node_modules/typebox/"))).toBe(true);
    const shipped = entries.filter((e) => e.path.startsWith("app/node_modules/")).map((e) => e.path);
    const sbom = spdxDocument(image) as { packages: { externalRefs: { referenceLocator: string }[] }[] };
    const npm = sbom.packages
      .map((p) => p.externalRefs[0]?.referenceLocator ?? "")
      .filter((l) => l.startsWith("pkg:npm/"));
    expect(npm).toEqual(expect.arrayContaining(["pkg:npm/typebox@1.4.3"]));
    for (const name of devDependencies) {
      expect(map.sources.filter((s) => s.includes(`node_modules/${name}/`))).toEqual([]);
      expect(shipped.filter((p) => p.startsWith(`app/node_modules/${name}/`))).toEqual([]);
      expect(npm.filter((l) => l.startsWith(`pkg:npm/${name.replace("@", "%40")}@`))).toEqual([]);
    }
  });

  it("differs between amd64 and arm64 only in the base libraries and the Node runtime", () => {
    const [amd, arm] = [platform("amd64"), platform("arm64")];
    const kinds = amd.layers.map((l) => l.comment.split(":")[0]);
    expect(kinds).toEqual(["base", "base", "runtime", "app"]);
    const same = amd.layers.map((l, i) => l.blob.digest === arm.layers[i]?.blob.digest);
    expect(same).toEqual([true, false, false, true]);
    const strip = (arch: "amd64" | "arm64") => {
      const { architecture, rootfs, history, ...rest } = configOf(arch);
      return { ...rest, layers: history.length, shared: [rootfs.diff_ids[0], rootfs.diff_ids[3]] };
    };
    expect(strip("arm64")).toEqual(strip("amd64"));
  });

  it("holds the official Node of the pinned version for each architecture (its ELF machine and release URL)", () => {
    for (const [arch, machine] of [
      ["amd64", 62],
      ["arm64", 183],
    ] as const) {
      const node = readTar(gunzipSync(platform(arch).layers[2]?.blob.bytes ?? Buffer.alloc(0))).find(
        (e) => e.path === "usr/local/bin/node",
      );
      const binary = Buffer.from(node?.data ?? []);
      expect(binary.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
      expect(binary.readUInt16LE(18)).toBe(machine);
      expect(
        binary.includes(`nodejs.org/download/release/v${NODE_VERSION}/node-v${NODE_VERSION}-headers.tar.gz`),
      ).toBe(true);
      expect(node?.mode).toBe(0o555);
    }
  });

  it.runIf(process.getuid?.() === 0)(
    "starts its operator as nonroot from the amd64 root filesystem (chroot)",
    () => {
      const rootfs = join(scratch, "rootfs");
      mkdirSync(rootfs);
      for (const layer of platform("amd64").layers) {
        const tar = join(scratch, "layer.tar");
        writeFileSync(tar, gunzipSync(layer.blob.bytes));
        expect(spawnSync("tar", ["-xf", tar, "-C", rootfs]).status).toBe(0);
      }
      const run = (args: string[], env: Record<string, string> = {}) =>
        spawnSync("chroot", ["--userspec=65532:65532", rootfs, ...args], {
          encoding: "utf8",
          env: { PATH: process.env.PATH, HOME: "/home/nonroot", ...env },
        });
      const version = run(["/usr/local/bin/node", "-p", "process.version + ' ' + process.getuid()"]);
      expect(version.stdout.trim(), version.stderr).toBe(`v${NODE_VERSION} 65532`);
      expect(run(["/bin/sh", "-c", "true"]).error ?? run(["/bin/sh", "-c", "true"]).status).not.toBe(0);
      // With no cluster to talk to, the manager stops at its own error: every module of the bundle
      // loaded. Source maps are off by default (they cost RSS); with them on, the stack names the
      // TypeScript sources.
      const operator = run(configOf("amd64").config.Entrypoint);
      expect(operator.status).not.toBe(0);
      expect(operator.stderr).toContain("No Kubernetes configuration found");
      expect(operator.stderr).not.toMatch(/at .*\/src\/main\.ts:\d+/);
      const mapped = run(configOf("amd64").config.Entrypoint, { NODE_OPTIONS: "--enable-source-maps" });
      expect(mapped.stderr).toContain("No Kubernetes configuration found");
      expect(mapped.stderr).toMatch(/at .*\/src\/main\.ts:\d+/);
      // The launcher in the image execs node with the heap flags for the limit it is given.
      writeFileSync(join(rootfs, "tmp/flags.mjs"), "console.log(JSON.stringify(process.execArgv));");
      const [node, ...flags] = configOf("amd64").config.Entrypoint;
      const launched = spawnSync(
        "chroot",
        ["--userspec=65532:65532", rootfs, node ?? "", ...flags.slice(0, -1), "/tmp/flags.mjs"],
        { encoding: "utf8", env: { PATH: process.env.PATH, KUBELOOP_MEMORY_LIMIT: String(256 * 2 ** 20) } },
      );
      expect(JSON.parse(launched.stdout), launched.stderr).toEqual([
        "--max-semi-space-size=4",
        "--max-old-space-size=192",
      ]);
    },
  );
});

describe("kubeloop build, the command", () => {
  const cli = join(import.meta.dirname, "../../../dist/cli/main.js");

  it("builds the MyApp and PgDatabase operators too, printing the digest of the tarball it writes, with an SBOM beside it", () => {
    for (const example of ["myapp", "pgdatabase"]) {
      const tarball = join(scratch, `${example}.tar`);
      const run = spawnSync(
        process.execPath,
        [cli, "build", join(REPO, "examples", example), "--tarball", tarball],
        {
          encoding: "utf8",
        },
      );
      expect(run.status, run.stderr).toBe(0);
      const { index } = readLayout(readFileSync(tarball));
      expect(run.stdout.trim()).toBe(index.manifests[0]?.digest);
      const sbom = JSON.parse(readFileSync(join(scratch, `${example}.spdx.json`), "utf8")) as {
        spdxVersion: string;
      };
      expect(sbom.spdxVersion).toBe("SPDX-2.3");
    }
  }, 600_000);

  it("says where the image should go when told nowhere", () => {
    const run = spawnSync(process.execPath, [cli, "build", NGINX], { encoding: "utf8" });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("say where the image goes: --tarball FILE, --push REF or --load");
  });
});
