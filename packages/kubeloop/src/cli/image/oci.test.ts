import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, zstdDecompressSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { layoutTar, readLayout } from "./layout.js";
import { configBlob, indexBlob, layerOf, MEDIA_TYPES, manifestBlob, type Platform, sha256 } from "./oci.js";
import { readTar, type TarEntry, writeTar } from "./tar.js";

const dir = mkdtempSync(join(tmpdir(), "kubeloop-oci-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LONG = `${"deep/".repeat(40)}file-with-a-long-name.js`;
const entries: TarEntry[] = [
  { path: "app/main.mjs", type: "file", mode: 0o444, data: Buffer.from("console.log(1)\n") },
  { path: "tmp", type: "dir", mode: 0o1777 },
  { path: "home/nonroot", type: "dir", mode: 0o755, uid: 65532, gid: 65532 },
  { path: "lib64/ld.so", type: "symlink", mode: 0o777, target: "../lib/x/ld.so" },
  { path: LONG, type: "file", mode: 0o444, data: Buffer.alloc(1000, 7) },
];

describe("writeTar", () => {
  it("writes the same bytes whatever the entries' order, with parents added and sorted", () => {
    const a = writeTar(entries);
    const b = writeTar([...entries].reverse());
    expect(a.equals(b)).toBe(true);
    expect(readTar(a).map((e) => e.path)).toEqual([
      "app",
      "app/main.mjs",
      "deep",
      ...Array.from({ length: 39 }, (_, i) => `deep${"/deep".repeat(i + 1)}`),
      LONG,
      "home",
      "home/nonroot",
      "lib64",
      "lib64/ld.so",
      "tmp",
    ]);
  });

  it("is read by GNU tar with fixed owners, modes and mtime, and long paths intact", () => {
    const file = join(dir, "layer.tar");
    writeFileSync(file, writeTar(entries));
    const listing = execFileSync("tar", ["-tvf", file, "--numeric-owner", "--full-time"], {
      encoding: "utf8",
      env: { ...process.env, TZ: "UTC" },
    });
    expect(listing).toMatch(/^drwxrwxrwt 0\/0 +0 1970-01-01 00:00:00 tmp\/$/m);
    expect(listing).toMatch(/^drwxr-xr-x 65532\/65532 +0 1970-01-01 00:00:00 home\/nonroot\/$/m);
    expect(listing).toMatch(
      /^lrwxrwxrwx 0\/0 +0 1970-01-01 00:00:00 lib64\/ld\.so -> \.\.\/lib\/x\/ld\.so$/m,
    );
    expect(listing).toContain(` ${LONG}\n`);
    const out = join(dir, "x");
    execFileSync("mkdir", ["-p", out]);
    execFileSync("tar", ["-xf", file, "-C", out, LONG]);
    expect(readFileSync(join(out, LONG))).toEqual(Buffer.alloc(1000, 7));
  });

  it("reads back what it wrote: types, modes, owners, data", () => {
    const read = readTar(writeTar(entries));
    expect(read.find((e) => e.path === "tmp")).toMatchObject({ type: "dir", mode: 0o1777, uid: 0 });
    expect(read.find((e) => e.path === "home/nonroot")).toMatchObject({ uid: 65532, gid: 65532 });
    expect(read.find((e) => e.path === "lib64/ld.so")).toMatchObject({
      type: "symlink",
      target: "../lib/x/ld.so",
    });
    expect(Buffer.from(read.find((e) => e.path === "app/main.mjs")?.data ?? []).toString()).toBe(
      "console.log(1)\n",
    );
  });

  it("refuses two different entries for one path", () => {
    const file = { path: "a", type: "file", mode: 0o444 } as const;
    expect(() => writeTar([file, file])).toThrow("two entries for a");
  });
});

describe("an OCI image layout", () => {
  const platforms: Platform[] = [
    { architecture: "amd64", os: "linux" },
    { architecture: "arm64", os: "linux" },
  ];
  const build = () => {
    const app = layerOf(entries, "app");
    const manifests = platforms.map((platform) => {
      const runtime = layerOf(
        [{ path: "usr/local/bin/node", type: "file", mode: 0o555, data: Buffer.from(platform.architecture) }],
        "runtime",
      );
      const layers = [runtime, app];
      const config = configBlob(
        { platform, entrypoint: ["/usr/local/bin/node"], env: [], workingDir: "/app", labels: {} },
        layers,
      );
      const manifest = manifestBlob(config, layers, {});
      return { platform, manifest, blobs: [config, ...layers.map((l) => l.blob)] };
    });
    const index = indexBlob(manifests, { "org.opencontainers.image.version": "0.1.0" });
    return { name: "example.com/op:0.1.0", index, blobs: manifests.flatMap((m) => [m.manifest, ...m.blobs]) };
  };

  it("is the same bytes when built twice", () => {
    expect(layoutTar(build()).equals(layoutTar(build()))).toBe(true);
  });

  it("has oci-layout, an index.json naming the image for containerd, and every blob under its digest", () => {
    const image = build();
    const { index, blobs } = readLayout(layoutTar(image));
    expect(index.manifests).toHaveLength(1);
    const top = index.manifests[0];
    expect(top).toMatchObject({ mediaType: MEDIA_TYPES.index, digest: image.index.digest });
    expect(top?.annotations).toEqual({
      "io.containerd.image.name": "example.com/op:0.1.0",
      "org.opencontainers.image.ref.name": "0.1.0",
    });
    const imageIndex = JSON.parse(String(blobs.get(image.index.digest))) as {
      manifests: { digest: string; size: number; platform: Platform }[];
    };
    expect(imageIndex.manifests.map((m) => m.platform.architecture)).toEqual(["amd64", "arm64"]);
    for (const entry of imageIndex.manifests) {
      const manifestBytes = blobs.get(entry.digest);
      expect(manifestBytes?.length).toBe(entry.size);
      const manifest = JSON.parse(String(manifestBytes)) as {
        config: { digest: string };
        layers: { digest: string; size: number; mediaType: string }[];
      };
      const config = JSON.parse(String(blobs.get(manifest.config.digest))) as {
        architecture: string;
        config: { User: string };
        rootfs: { diff_ids: string[] };
      };
      expect(config.architecture).toBe(entry.platform.architecture);
      expect(config.config.User).toBe("65532:65532");
      // diff_ids are the digests of the uncompressed layers, in order.
      expect(manifest.layers.map((l) => sha256(gunzipSync(blobs.get(l.digest) ?? Buffer.alloc(0))))).toEqual(
        config.rootfs.diff_ids,
      );
      for (const layer of manifest.layers) expect(blobs.get(layer.digest)?.length).toBe(layer.size);
    }
  });

  it("gzips with a fixed header: mtime 0 and OS unknown", () => {
    const layer = layerOf(entries, "app").blob.bytes;
    expect(layer.readUInt32LE(4)).toBe(0);
    expect(layer[9]).toBe(255);
  });
});

describe("zstd layers", () => {
  it("are the same bytes when made twice, decompress to the layer's tar, and say so in their media type", () => {
    const a = layerOf(entries, "app", "zstd");
    const b = layerOf([...entries].reverse(), "app", "zstd");
    expect(a.blob.bytes.equals(b.blob.bytes)).toBe(true);
    expect(a.blob.mediaType).toBe("application/vnd.oci.image.layer.v1.tar+zstd");
    expect(sha256(zstdDecompressSync(a.blob.bytes))).toBe(a.diffId);
    expect(a.diffId).toBe(layerOf(entries, "app", "gzip").diffId);
  });
});
