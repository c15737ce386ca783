import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { parse } from "yaml";
import { CliError } from "../errors.js";
import type { Image } from "./layout.js";
import { configBlob, indexBlob, layerOf, manifestBlob, type Platform } from "./oci.js";
import type { TarEntry } from "./tar.js";

/**
 * The OLM bundle image (`kubeloop build --bundle`): what operator-sdk's `bundle.Dockerfile`
 * describes (`FROM scratch`, bundle/manifests at /manifests/, bundle/metadata at /metadata/, the
 * labels of metadata/annotations.yaml), written directly like the operator's image, so no
 * Dockerfile is generated that nothing builds. One layer of files, in an index for amd64 and arm64
 * (the same layer; OLM's unpacker reads the files, whatever the node's architecture).
 */
export function buildBundleImage(
  root: string,
  name: string,
): Image & { digest: string; labels: Record<string, string> } {
  const bundle = join(root, "bundle");
  const annotationsFile = join(bundle, "metadata", "annotations.yaml");
  if (!existsSync(annotationsFile)) {
    throw new CliError(
      `${annotationsFile} does not exist: run kubeloop generate first (it writes the OLM bundle)`,
    );
  }
  const { annotations } = parse(readFileSync(annotationsFile, "utf8")) as {
    annotations?: Record<string, string>;
  };
  if (!annotations) throw new CliError(`${annotationsFile} has no "annotations"`);
  const files: TarEntry[] = ["manifests", "metadata"].flatMap((dir) =>
    walk(join(bundle, dir)).map((file) => ({
      path: `${dir}/${relative(join(bundle, dir), file).split(sep).join("/")}`,
      type: "file" as const,
      mode: 0o444,
      data: readFileSync(file),
    })),
  );
  const layer = layerOf(files, "OLM bundle: manifests/ and metadata/");
  const platforms = (["amd64", "arm64"] as const).map((architecture) => {
    const platform: Platform = { architecture, os: "linux" };
    const config = configBlob({ platform, entrypoint: [], env: [], workingDir: "/", labels: annotations }, [
      layer,
    ]);
    return { platform, config, manifest: manifestBlob(config, [layer], {}) };
  });
  const index = indexBlob(platforms, {});
  return {
    name,
    index,
    digest: index.digest,
    labels: annotations,
    blobs: platforms.flatMap((p) => [p.manifest, p.config, layer.blob]),
  };
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      return statSync(path).isDirectory() ? walk(path) : [path];
    });
}
