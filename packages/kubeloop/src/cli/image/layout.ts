import { type Blob, type Descriptor, descriptor, MEDIA_TYPES, sha256 } from "./oci.js";
import { readTar, type TarEntry, writeTar } from "./tar.js";

/**
 * A built image: its index (the digest users pin) and every blob the index reaches. Written as an
 * OCI image layout in a tar (`--tarball`), the form `ctr images import`, `skopeo copy oci-archive:`
 * and `crane push` read, or pushed to a registry (push.ts).
 */
export interface Image {
  /** The full reference it is named by, e.g. `ghcr.io/example/nginx-operator:0.1.0`. */
  name: string;
  index: Blob;
  /** Manifests, configs and layers, each once. */
  blobs: readonly Blob[];
}

/**
 * The OCI image layout (image-spec `image-layout.md`) as a tar: `oci-layout`, `index.json` and
 * `blobs/sha256/<hex>`. index.json points at the image index and names it twice: containerd
 * (`ctr images import`) takes the whole name from `io.containerd.image.name`, other readers the tag
 * from `org.opencontainers.image.ref.name`.
 */
export function layoutTar(image: Image): Buffer {
  const entries: TarEntry[] = [
    {
      path: "oci-layout",
      type: "file",
      mode: 0o644,
      data: Buffer.from(JSON.stringify({ imageLayoutVersion: "1.0.0" })),
    },
    { path: "index.json", type: "file", mode: 0o644, data: Buffer.from(JSON.stringify(layoutIndex(image))) },
  ];
  const seen = new Set<string>();
  for (const blob of [image.index, ...image.blobs]) {
    if (seen.has(blob.digest)) continue;
    seen.add(blob.digest);
    entries.push({ path: `blobs/sha256/${hex(blob.digest)}`, type: "file", mode: 0o644, data: blob.bytes });
  }
  return writeTar(entries);
}

function layoutIndex(image: Image): object {
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.index,
    manifests: [
      {
        ...descriptor(image.index),
        annotations: {
          "io.containerd.image.name": image.name,
          "org.opencontainers.image.ref.name": tagOf(image.name),
        },
      },
    ],
  };
}

/** The tag of a reference (`latest` when it has none; the digest's hex when it is pinned by digest). */
export function tagOf(reference: string): string {
  const at = reference.indexOf("@");
  if (at >= 0) return hex(reference.slice(at + 1));
  const lastSlash = reference.lastIndexOf("/");
  const colon = reference.lastIndexOf(":");
  return colon > lastSlash ? reference.slice(colon + 1) : "latest";
}

export function hex(digest: string): string {
  return digest.replace(/^sha256:/, "");
}

/** A layout tar read back: index.json's entries and the blobs by digest, each checked against its digest. */
export function readLayout(tar: Uint8Array): {
  index: { manifests: Descriptor[] };
  blobs: Map<string, Buffer>;
} {
  const files = new Map(
    readTar(tar)
      .filter((e) => e.type === "file")
      .map((e) => [e.path, Buffer.from(e.data ?? [])]),
  );
  const layout = files.get("oci-layout");
  if (
    !layout ||
    (JSON.parse(layout.toString()) as { imageLayoutVersion?: string }).imageLayoutVersion !== "1.0.0"
  ) {
    throw new Error("not an OCI image layout: no oci-layout file with imageLayoutVersion 1.0.0");
  }
  const index = files.get("index.json");
  if (!index) throw new Error("not an OCI image layout: no index.json");
  const blobs = new Map<string, Buffer>();
  for (const [path, bytes] of files) {
    const match = /^blobs\/sha256\/([0-9a-f]{64})$/.exec(path);
    if (!match) continue;
    const digest = sha256(bytes);
    if (digest !== `sha256:${match[1]}`) throw new Error(`${path} holds content whose digest is ${digest}`);
    blobs.set(digest, bytes);
  }
  return { index: JSON.parse(index.toString()) as { manifests: Descriptor[] }, blobs };
}
