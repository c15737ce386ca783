import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { buildBundleImage } from "./bundle-image.js";
import { layoutTar, readLayout } from "./layout.js";
import { readTar } from "./tar.js";

const NGINX = join(import.meta.dirname, "../../../../../examples/nginx");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe("kubeloop build --bundle (the nginx example's OLM bundle image)", () => {
  const image = buildBundleImage(NGINX, "127.0.0.1:5000/nginx-operator-bundle:0.1.0");

  it("is labelled with exactly the annotations of metadata/annotations.yaml", () => {
    const { annotations } = parse(readFileSync(join(NGINX, "bundle/metadata/annotations.yaml"), "utf8")) as {
      annotations: Record<string, string>;
    };
    expect(annotations["operators.operatorframework.io.bundle.mediatype.v1"]).toBe("registry+v1");
    const { blobs } = readLayout(layoutTar(image));
    const index = JSON.parse(String(blobs.get(image.digest))) as { manifests: { digest: string }[] };
    for (const entry of index.manifests) {
      const manifest = JSON.parse(String(blobs.get(entry.digest))) as { config: { digest: string } };
      const config = JSON.parse(String(blobs.get(manifest.config.digest))) as { config: { Labels: object } };
      expect(config.config.Labels).toEqual(annotations);
    }
  });

  it("holds bundle/manifests at /manifests and bundle/metadata at /metadata, byte for byte, and nothing else", () => {
    const layer = image.blobs.find((b) => b.mediaType.endsWith("tar+gzip"));
    const entries = readTar(gunzipSync(layer?.bytes ?? Buffer.alloc(0))).filter((e) => e.type === "file");
    const expected = files(join(NGINX, "bundle")).map((file) => relative(join(NGINX, "bundle"), file));
    expect(entries.map((e) => e.path).sort()).toEqual(expected.sort());
    for (const entry of entries) {
      expect(Buffer.from(entry.data ?? []).equals(readFileSync(join(NGINX, "bundle", entry.path)))).toBe(
        true,
      );
    }
  });

  it("is the same image when built twice", () => {
    expect(buildBundleImage(NGINX, image.name).digest).toBe(image.digest);
  });
});
