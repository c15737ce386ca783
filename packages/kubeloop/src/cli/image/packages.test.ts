import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageClosure } from "./base.js";
import { type BuiltImage, buildImage } from "./build.js";
import { readTar } from "./tar.js";

// Debian packages an operator runs, beside the base: the PgDatabase example calls pg_dump and
// pg_restore itself, so its package.json asks for `postgresql-client-15` (kubeloop.imagePackages).

const REPO = join(import.meta.dirname, "../../../../..");
const PG_BIN = "usr/lib/postgresql/15/bin";
const scratch = mkdtempSync(join(tmpdir(), "kubeloop-image-packages-"));
let image: BuiltImage;
let plain: BuiltImage;

beforeAll(async () => {
  [image, plain] = await Promise.all([
    buildImage({ dir: join(REPO, "examples/pgdatabase"), platforms: ["amd64"] }),
    buildImage({ dir: join(REPO, "examples/sampledb"), platforms: ["amd64"] }),
  ]);
}, 600_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("kubeloop build with imagePackages", () => {
  it("follows the packages' shared libraries, not their interpreters, and leaves out what the base holds", async () => {
    const names = await packageClosure(["postgresql-client-15"], "amd64");
    expect(names).toEqual(expect.arrayContaining(["postgresql-client-15", "libpq5", "libssl3", "libzstd1"]));
    expect(names).not.toContain("perl");
    expect(names).not.toContain("libc6");
    expect(names).toEqual([...names].sort());
    await expect(packageClosure(["postgresql-client-15 --allow-unauthenticated"], "amd64")).rejects.toThrow(
      "not a Debian package name",
    );
  });

  it("adds them as one layer after the runtime: the layers before it are every operator's", () => {
    const layers = image.platforms[0]?.layers ?? [];
    const shared = plain.platforms[0]?.layers ?? [];
    expect(layers).toHaveLength(5);
    expect(layers.slice(0, 3).map((l) => l.diffId)).toEqual(shared.slice(0, 3).map((l) => l.diffId));
    const paths = readTar(gunzipSync(layers[3]?.blob.bytes ?? Buffer.alloc(0))).map((e) => e.path);
    expect(paths).toContain(`${PG_BIN}/pg_dump`);
    expect(paths.some((p) => p.startsWith("usr/share/doc/"))).toBe(false);
    expect(image.debian.map((d) => d.name)).toContain("postgresql-client-15");
  });

  it.runIf(process.getuid?.() === 0)(
    "runs pg_dump and pg_restore as nonroot in its root filesystem (chroot)",
    () => {
      const rootfs = join(scratch, "rootfs");
      mkdirSync(rootfs);
      for (const layer of image.platforms[0]?.layers ?? []) {
        const tar = join(scratch, "layer.tar");
        writeFileSync(tar, gunzipSync(layer.blob.bytes));
        expect(spawnSync("tar", ["-xf", tar, "-C", rootfs]).status).toBe(0);
      }
      for (const program of ["pg_dump", "pg_restore"]) {
        const run = spawnSync(
          "chroot",
          ["--userspec=65532:65532", rootfs, `/${PG_BIN}/${program}`, "--version"],
          {
            encoding: "utf8",
            env: { PATH: process.env.PATH },
          },
        );
        expect(run.stdout, run.stderr).toMatch(new RegExp(`^${program} \\(PostgreSQL\\) 15\\.`));
      }
      // Still no shell: the packages' wrapper scripts want perl, which was not followed.
      expect(spawnSync("chroot", [rootfs, "/bin/sh", "-c", "true"]).status).not.toBe(0);
    },
  );
});
