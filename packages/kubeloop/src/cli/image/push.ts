import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CliError } from "../errors.js";
import type { Image } from "./layout.js";
import { type Blob, sha256 } from "./oci.js";

/**
 * Pushes an image over the registry HTTP API (the OCI distribution spec): each blob unless the
 * registry has it (HEAD, then a monolithic POST + PUT upload), each platform's manifest by digest,
 * then the index under the reference's tag. Credentials come from the docker config file
 * (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, the `auths` entries `docker login`
 * writes), sent as Basic or exchanged for a Bearer token when the registry asks. Loopback
 * registries (localhost, 127.0.0.0/8, ::1) are spoken to over plain http, as containerd and
 * go-containerregistry do; every other one over https.
 */

export interface Reference {
  registry: string;
  repository: string;
  tag: string;
}

/** `host[:port]/path[:tag]`; a reference without a registry host is refused (it would mean Docker Hub). */
export function parseReference(reference: string): Reference {
  const match = /^([^/]+)\/(.+?)(?::([\w][\w.-]{0,127}))?$/.exec(reference);
  const registry = match?.[1];
  if (
    !match ||
    !registry ||
    !(registry.includes(".") || registry.includes(":") || registry === "localhost")
  ) {
    throw new CliError(
      `"${reference}" is not a registry reference: write host[:port]/repository[:tag], e.g. 127.0.0.1:5000/my-operator:0.1.0`,
    );
  }
  return { registry, repository: match[2] ?? "", tag: match[3] ?? "latest" };
}

export function isLoopback(registry: string): boolean {
  const host = registry.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Pushes `image` to `reference`; returns the reference pinned by digest. `plainHttp` talks HTTP to a
 * registry that is not on loopback (a test cluster's, on its bridge).
 */
export async function pushImage(image: Image, reference: string, plainHttp = false): Promise<string> {
  const ref = parseReference(reference);
  const session = new RegistrySession(ref, plainHttp);
  const manifests = image.blobs.filter((b) => b.mediaType.includes("manifest"));
  const others = image.blobs.filter((b) => !b.mediaType.includes("manifest"));
  const seen = new Set<string>();
  for (const blob of others) {
    if (seen.has(blob.digest)) continue;
    seen.add(blob.digest);
    await session.pushBlob(blob);
  }
  for (const manifest of manifests) await session.putManifest(manifest, manifest.digest);
  await session.putManifest(image.index, ref.tag);
  return `${ref.registry}/${ref.repository}@${image.index.digest}`;
}

/** One repository on one registry, with the authorization it asked for once. */
export class RegistrySession {
  private readonly base: string;
  private authorization: string | undefined;

  constructor(
    private readonly ref: Reference,
    plainHttp = false,
  ) {
    const scheme = plainHttp || isLoopback(ref.registry) ? "http" : "https";
    this.base = `${scheme}://${ref.registry}/v2/${ref.repository}`;
  }

  async pushBlob(blob: Blob): Promise<void> {
    const head = await this.request("HEAD", `${this.base}/blobs/${blob.digest}`);
    if (head.status === 200) return;
    const start = await this.request("POST", `${this.base}/blobs/uploads/`);
    await expectStatus(start, 202, `starting the upload of ${blob.digest}`);
    const location = new URL(start.headers.get("location") ?? "", this.base);
    location.searchParams.set("digest", blob.digest);
    const put = await this.request("PUT", location.toString(), blob.bytes, "application/octet-stream");
    await expectStatus(put, 201, `uploading ${blob.digest} (${blob.size} bytes)`);
  }

  /** A manifest (by tag or digest, as any of `accept`'s media types) or a blob, checked against its digest when addressed by one. */
  async get(
    kind: "manifests" | "blobs",
    reference: string,
    accept: readonly string[] = [],
  ): Promise<{ bytes: Buffer; mediaType: string }> {
    const response = await this.request(
      "GET",
      `${this.base}/${kind}/${reference}`,
      undefined,
      undefined,
      accept,
    );
    await expectStatus(
      response,
      200,
      `getting ${this.ref.registry}/${this.ref.repository} ${kind} ${reference}`,
    );
    const bytes = Buffer.from(await response.arrayBuffer());
    if (reference.startsWith("sha256:") && sha256(bytes) !== reference) {
      throw new CliError(`${this.ref.registry} sent ${kind} ${reference} with the digest ${sha256(bytes)}`);
    }
    return { bytes, mediaType: response.headers.get("content-type")?.split(";")[0] ?? "" };
  }

  async putManifest(blob: Blob, reference: string): Promise<void> {
    const put = await this.request("PUT", `${this.base}/manifests/${reference}`, blob.bytes, blob.mediaType);
    await expectStatus(put, 201, `putting the manifest ${reference}`);
  }

  private async request(
    method: string,
    url: string,
    body?: Buffer,
    contentType?: string,
    accept: readonly string[] = [],
  ): Promise<Response> {
    const send = () =>
      fetch(url, {
        method,
        headers: {
          ...(this.authorization ? { authorization: this.authorization } : {}),
          ...(contentType ? { "content-type": contentType } : {}),
          ...(accept.length > 0 ? { accept: accept.join(", ") } : {}),
        },
        ...(body ? { body: new Uint8Array(body) } : {}),
      }).catch((error: Error) => {
        throw new CliError(
          `cannot reach the registry ${this.ref.registry} (${url}): ${error.cause ?? error.message}`,
        );
      });
    let response = await send();
    if (response.status === 401 && !this.authorization) {
      this.authorization = await this.authorize(response.headers.get("www-authenticate") ?? "");
      response = await send();
    }
    return response;
  }

  /** Basic credentials from the docker config, or a Bearer token from the realm the registry names. */
  private async authorize(challenge: string): Promise<string> {
    const basic = dockerCredentials(this.ref.registry);
    if (/^basic/i.test(challenge)) {
      if (!basic) throw new CliError(noCredentials(this.ref.registry));
      return `Basic ${basic}`;
    }
    const params = Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (!params.realm)
      throw new CliError(`${this.ref.registry} refused the push and asked for "${challenge}"`);
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set("service", params.service);
    url.searchParams.set("scope", params.scope ?? `repository:${this.ref.repository}:pull,push`);
    const response = await fetch(url, basic ? { headers: { authorization: `Basic ${basic}` } } : {});
    await expectStatus(response, 200, `getting a token from ${url.origin}`);
    const json = (await response.json()) as { token?: string; access_token?: string };
    return `Bearer ${json.token ?? json.access_token ?? ""}`;
  }
}

async function expectStatus(response: Response, status: number, what: string): Promise<void> {
  if (response.status === status || (status === 201 && response.status === 200)) return;
  const text = await response.text().catch(() => "");
  if (response.status === 401 || response.status === 403) {
    throw new CliError(
      `the registry refused ${what} (${response.status}): ${text.trim()} — check the credentials of docker login`,
    );
  }
  throw new CliError(`${what} failed: ${response.status} ${response.statusText} ${text.trim()}`);
}

/** The base64 `user:password` for a registry in the docker config file, if any. */
export function dockerCredentials(
  registry: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const file = join(env.DOCKER_CONFIG ?? join(homedir(), ".docker"), "config.json");
  if (!existsSync(file)) return undefined;
  const config = JSON.parse(readFileSync(file, "utf8")) as {
    auths?: Record<string, { auth?: string; username?: string; password?: string }>;
  };
  for (const [key, entry] of Object.entries(config.auths ?? {})) {
    if (key.replace(/^https?:\/\//, "").replace(/\/.*$/, "") !== registry) continue;
    if (entry.auth) return entry.auth;
    if (entry.username && entry.password)
      return Buffer.from(`${entry.username}:${entry.password}`).toString("base64");
  }
  return undefined;
}

function noCredentials(registry: string): string {
  return `${registry} asks for credentials and the docker config file has none for it: run docker login ${registry} (or write its "auths" entry in ~/.docker/config.json)`;
}
