// First: on a Node kubeloop does not support, the client's check says which Node it needs before
// undici (below) fails to load on it.
import "../../client/index.js";
import { createHash, type Hash } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { EnvHttpProxyAgent, fetch } from "undici";
import { AssetsError } from "./errors.js";

/**
 * HTTP(S) downloads for prebuilt binaries. Proxies come from HTTPS_PROXY / HTTP_PROXY / NO_PROXY
 * (either case), as curl, kubectl and npm read them, through undici's EnvHttpProxyAgent (undici is
 * already a dependency; Node's own fetch ignores those variables unless NODE_USE_ENV_PROXY is set).
 * Extra CAs come from NODE_EXTRA_CA_CERTS, which Node reads at start-up for every TLS connection.
 */

/** A download that failed: which URL, and why. Callers fall back to the Go build on these. */
export class DownloadError extends AssetsError {
  readonly url: string;
  constructor(url: string, reason: string) {
    super(`Downloading ${url} failed: ${reason}`);
    this.url = url;
  }
}

/** How long a transfer may go without a byte before it is abandoned. */
export const DEFAULT_STALL_MS = 30_000;
/** Overrides {@link DEFAULT_STALL_MS}, in seconds. */
export const STALL_ENV = "KUBELOOP_ASSETS_TIMEOUT";

export interface DownloadOptions {
  /** Abandon the transfer after this long without data. Defaults to `$KUBELOOP_ASSETS_TIMEOUT` s, else 30 s. */
  stallMs?: number;
  /** Progress of a long transfer (`kube-apiserver: 45 of 90 MB`); called at most once a second. */
  onProgress?: (line: string) => void;
}

let agent: EnvHttpProxyAgent | undefined;

/** One agent per process: it reads the proxy variables once, and pools connections. */
function dispatcher(): EnvHttpProxyAgent {
  agent ??= new EnvHttpProxyAgent();
  return agent;
}

export function stallTimeout(options: DownloadOptions, env: NodeJS.ProcessEnv = process.env): number {
  if (options.stallMs !== undefined) return options.stallMs;
  const seconds = Number(env[STALL_ENV]);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_STALL_MS;
}

export interface Downloaded {
  sha256: string;
  sha512: string;
  bytes: number;
}

/**
 * A connection closed by the server before any byte of the answer: what a keep-alive connection
 * the server has just timed out looks like when it is reused. Such a request is sent once more.
 */
class StaleConnection extends Error {}

async function retryStale<T>(attempt: (mayRetry: boolean) => Promise<T>): Promise<T> {
  try {
    return await attempt(true);
  } catch (error) {
    if (error instanceof StaleConnection) return attempt(false);
    throw error;
  }
}

/** Streams `url` into `path`, hashing as it goes; any failure is a {@link DownloadError}. */
export function downloadTo(url: string, path: string, options: DownloadOptions = {}): Promise<Downloaded> {
  return retryStale((mayRetry) => downloadToOnce(url, path, options, mayRetry));
}

async function downloadToOnce(
  url: string,
  path: string,
  options: DownloadOptions,
  mayRetry: boolean,
): Promise<Downloaded> {
  const stallMs = stallTimeout(options);
  const abort = new AbortController();
  let stalled = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      abort.abort();
    }, stallMs);
  };
  const hashes: [Hash, Hash] = [createHash("sha256"), createHash("sha512")];
  const out = createWriteStream(path);
  let writeError: Error | undefined;
  // Once destroyed after a failure, pending writes report here instead of crashing the process.
  out.on("error", (error) => {
    writeError ??= error;
  });
  let bytes = 0;
  arm();
  try {
    const response = await fetch(url, { dispatcher: dispatcher(), signal: abort.signal, redirect: "follow" });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new DownloadError(url, `HTTP ${response.status} ${response.statusText}`.trim());
    }
    const total = Number(response.headers.get("content-length")) || undefined;
    const report = throttle(options.onProgress);
    for await (const chunk of response.body) {
      arm();
      const buffer = Buffer.from(chunk);
      bytes += buffer.length;
      for (const hash of hashes) hash.update(buffer);
      if (!out.write(buffer)) await once(out, "drain");
      report?.(`${megabytes(bytes)}${total ? ` of ${megabytes(total)}` : ""} MB`);
    }
    out.end();
    await once(out, "finish");
    if (writeError) throw new AssetsError(`Writing ${path} failed: ${writeError.message}`);
    return { sha256: hashes[0].digest("hex"), sha512: hashes[1].digest("hex"), bytes };
  } catch (error) {
    out.destroy();
    if (error instanceof DownloadError) throw error;
    if (stalled) {
      throw new DownloadError(
        url,
        `no data for ${stallMs / 1000} s after ${bytes} bytes (raise ${STALL_ENV}, in seconds, on a slow link)`,
      );
    }
    if (mayRetry && bytes === 0 && isReset(error)) throw new StaleConnection(describe(error));
    throw new DownloadError(url, describe(error));
  } finally {
    clearTimeout(timer);
  }
}

/** Fetches a small text file (a checksum, an index) into memory. */
export async function downloadText(url: string, options: DownloadOptions = {}): Promise<string> {
  return (await downloadBuffer(url, options)).toString("utf8");
}

/** Fetches a small file into memory, with the same timeout and errors as {@link downloadTo}. */
export function downloadBuffer(
  url: string,
  options: DownloadOptions & { accept?: string } = {},
): Promise<Buffer> {
  return retryStale((mayRetry) => downloadBufferOnce(url, options, mayRetry));
}

function isReset(error: unknown): boolean {
  const cause = (error as { cause?: NodeJS.ErrnoException }).cause ?? (error as NodeJS.ErrnoException);
  return cause.code === "ECONNRESET" || cause.code === "UND_ERR_SOCKET";
}

async function downloadBufferOnce(
  url: string,
  options: DownloadOptions & { accept?: string },
  mayRetry: boolean,
): Promise<Buffer> {
  const abort = new AbortController();
  const stallMs = stallTimeout(options);
  const timer = setTimeout(() => abort.abort(), stallMs);
  try {
    const headers = options.accept ? { accept: options.accept } : undefined;
    const response = await fetch(url, { dispatcher: dispatcher(), signal: abort.signal, headers });
    if (!response.ok) {
      await response.body?.cancel();
      throw new DownloadError(url, `HTTP ${response.status} ${response.statusText}`.trim());
    }
    return Buffer.from(await response.arrayBuffer());
  } catch (error) {
    if (error instanceof DownloadError) throw error;
    if (abort.signal.aborted)
      throw new DownloadError(url, `no answer within ${stallMs / 1000} s (${STALL_ENV})`);
    if (mayRetry && isReset(error)) throw new StaleConnection(describe(error));
    throw new DownloadError(url, describe(error));
  } finally {
    clearTimeout(timer);
  }
}

/** undici wraps the socket's error in `TypeError: fetch failed`; the cause says what happened. */
function describe(error: unknown): string {
  const cause = (error as { cause?: NodeJS.ErrnoException }).cause;
  const inner = cause ?? (error as NodeJS.ErrnoException);
  const code = inner.code ? ` (${inner.code})` : "";
  if (inner.code === "ECONNRESET" || /other side closed|socket/i.test(inner.message ?? "")) {
    return `the connection was reset${code}: ${inner.message}`;
  }
  if (inner.code === "ENOTFOUND" || inner.code === "EAI_AGAIN") {
    return `the host could not be resolved${code}; behind a proxy set HTTPS_PROXY, offline set KUBELOOP_ASSETS_MIRROR`;
  }
  return `${inner.message ?? String(error)}${code}`;
}

function megabytes(bytes: number): string {
  return (bytes / 1e6).toFixed(0);
}

function throttle(report: ((line: string) => void) | undefined): ((line: string) => void) | undefined {
  if (!report) return undefined;
  let last = 0;
  return (line) => {
    const now = Date.now();
    if (now - last < 1000) return;
    last = now;
    report(line);
  };
}
