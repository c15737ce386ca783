import { gunzipSync, zstdDecompressSync } from "node:zlib";
import { CliError } from "../errors.js";
import { blobOf, type Layer, MEDIA_TYPES, type Platform, sha256 } from "./oci.js";
import { parseReference, RegistrySession } from "./push.js";

/**
 * A base image from a registry (`kubeloop build --base REF`, e.g. a distroless `cc` image): its
 * layers for one platform, fetched over the distribution API (the same credentials and loopback
 * rules as a push) and checked against their digests and the config's diff_ids. They replace the
 * base made from Debian's packages; the runtime and the operator go on top.
 */

const DOCKER = {
  index: "application/vnd.docker.distribution.manifest.list.v2+json",
  manifest: "application/vnd.docker.distribution.manifest.v2+json",
} as const;
const ACCEPT = [MEDIA_TYPES.index, MEDIA_TYPES.manifest, DOCKER.index, DOCKER.manifest];

export interface PulledBase {
  /** The reference pinned by the digest it resolved to (of the index, or of the manifest when there is none). */
  pinned: string;
  digest: string;
  layers: Layer[];
}

export async function pullBase(reference: string, platform: Platform): Promise<PulledBase> {
  const ref = parseReference(reference);
  const session = new RegistrySession(ref);
  const top = await session.get("manifests", ref.tag, ACCEPT);
  const digest = sha256(top.bytes);
  let manifest = JSON.parse(top.bytes.toString()) as Manifest;
  if (manifest.manifests) {
    const entry = manifest.manifests.find(
      (m) => m.platform?.os === platform.os && m.platform?.architecture === platform.architecture,
    );
    if (!entry) throw new CliError(`${reference} has no image for ${platform.os}/${platform.architecture}`);
    manifest = JSON.parse(
      (await session.get("manifests", entry.digest, ACCEPT)).bytes.toString(),
    ) as Manifest;
  }
  if (!manifest.config || !manifest.layers) throw new CliError(`${reference} is not an image manifest`);
  const config = JSON.parse((await session.get("blobs", manifest.config.digest)).bytes.toString()) as {
    rootfs?: { diff_ids?: string[] };
  };
  const diffIds = config.rootfs?.diff_ids ?? [];
  const layers: Layer[] = [];
  for (const [i, descriptor] of manifest.layers.entries()) {
    const { bytes } = await session.get("blobs", descriptor.digest);
    const tar = descriptor.mediaType.endsWith("zstd") ? zstdDecompressSync(bytes) : gunzipSync(bytes);
    if (sha256(tar) !== diffIds[i]) throw new CliError(`${reference}: layer ${i} does not match its diff_id`);
    layers.push({
      blob: blobOf(descriptor.mediaType, bytes),
      diffId: sha256(tar),
      uncompressedSize: tar.length,
      comment: `base: ${reference} layer ${i + 1}`,
    });
  }
  return { pinned: `${ref.registry}/${ref.repository}@${digest}`, digest, layers };
}

interface Manifest {
  manifests?: { digest: string; platform?: { os?: string; architecture?: string } }[];
  config?: { digest: string };
  layers?: { digest: string; mediaType: string }[];
}
