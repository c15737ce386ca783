import { createHash } from "node:crypto";
import { type DownloadOptions, downloadBuffer } from "./download.js";
import { AssetsError } from "./errors.js";
import { fileIn, readTarGz } from "./tar.js";
import type { Arch, ImageArtifact } from "./upstream.js";

/**
 * A binary out of a single-layer image, pulled as containerd would through the registry API
 * (OCI distribution spec: `GET /v2/<name>/manifests/<ref>`, `GET /v2/<name>/blobs/<digest>`): the
 * tag's index picks the platform's manifest, and the manifest and its layer are each checked
 * against the digest they are addressed by. A mirror serves those paths as plain files.
 */

const INDEX_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");

interface Descriptor {
  digest: string;
  mediaType?: string;
  platform?: { os?: string; architecture?: string };
}

export async function pullImageBinary(
  artifact: ImageArtifact,
  base: string,
  arch: Arch,
  options: DownloadOptions,
): Promise<Buffer> {
  const tagUrl = `${base}/manifests/${artifact.tag}`;
  const top = parseJson(await downloadBuffer(tagUrl, { ...options, accept: INDEX_TYPES }), tagUrl) as {
    manifests?: Descriptor[];
    layers?: Descriptor[];
  };
  let layers = top.layers;
  if (top.manifests) {
    const wanted = top.manifests.find((m) => m.platform?.os === "linux" && m.platform.architecture === arch);
    if (!wanted) throw new AssetsError(`${tagUrl} lists no linux/${arch} image`);
    const url = `${base}/manifests/${wanted.digest}`;
    const manifest = await checkedBlob(url, wanted.digest, options, INDEX_TYPES);
    layers = (parseJson(manifest, url) as { layers?: Descriptor[] }).layers;
  }
  const layer = layers?.at(-1);
  if (!layer) throw new AssetsError(`${tagUrl}: the image has no layers`);
  const url = `${base}/blobs/${layer.digest}`;
  const blob = await checkedBlob(url, layer.digest, options);
  return fileIn(readTarGz(blob, url), artifact.path, url).data;
}

async function checkedBlob(
  url: string,
  digest: string,
  options: DownloadOptions,
  accept?: string,
): Promise<Buffer> {
  const [algorithm, expected] = digest.split(":");
  if (algorithm !== "sha256" || !expected) throw new AssetsError(`${url}: unsupported digest ${digest}`);
  const body = await downloadBuffer(url, accept ? { ...options, accept } : options);
  const actual = createHash("sha256").update(body).digest("hex");
  if (actual !== expected) {
    throw new AssetsError(
      `Checksum mismatch for ${url}: expected sha256 ${expected}, got ${actual}. Nothing was installed.`,
    );
  }
  return body;
}

function parseJson(body: Buffer, url: string): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    throw new AssetsError(`${url} is not a JSON manifest`);
  }
}
