import { existsSync, readFileSync } from "node:fs";
import type { RequestOptions } from "node:https";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { parse } from "yaml";
import { ConfigError } from "./errors.js";

/**
 * Where a client connects and how it authenticates. Loading and auth (client certificates, tokens,
 * token files, exec plugins, OIDC) are @kubernetes/client-node's `KubeConfig`, the well-kept
 * implementation; this module only decides which source to load and keeps the per-request part
 * (the Authorization header) cheap. The plain case (one file; inline CA, client certificate or a
 * static token) is read directly, without loading client-node: its module pulls in the whole
 * generated API, about 0.4 s of start-up and 80 MiB of RSS that an operator never uses. So is a
 * pod's service account (`inClusterConfig`), the case of every operator in production.
 */
export interface ClusterConfig {
  /** `https://host:port`, without a trailing slash. */
  server: string;
  /** TLS material for the connection; verification is on unless the kubeconfig turns it off. */
  tls: {
    ca?: string | Buffer;
    cert?: string | Buffer;
    key?: string | Buffer;
    rejectUnauthorized: boolean;
    servername?: string;
  };
  /** The namespace the context names (default `default`); used only where the caller asks for it. */
  namespace: string;
  /** Where the configuration came from, for messages (`/path/to/kubeconfig`, `in-cluster`). */
  source: string;
  /** The Authorization header for the next request (a fresh token when the source rotates). */
  authorization(): Promise<string | undefined>;
}

export interface LoadConfigOptions {
  /** A kubeconfig file. Default: `$KUBECONFIG` (colon-separated files are merged), else `~/.kube/config`. */
  kubeconfig?: string;
  /** The kubeconfig's text itself, instead of a file. */
  kubeconfigText?: string;
  /** A context other than the current one. */
  context?: string;
}

/** Dynamic credentials (token files, exec plugins) are re-evaluated at most this often. */
const AUTH_REFRESH_MS = 10_000;
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Loads the configuration the way kubectl does: an explicit file or text, `$KUBECONFIG`,
 * `~/.kube/config`, and inside a pod the service account. Unlike client-node's `loadFromDefault`,
 * finding nothing is an error, never a silent `http://localhost:8080`.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<ClusterConfig> {
  const found = findKubeconfig(options);
  if (!found) {
    const inCluster = inClusterConfig();
    if (inCluster) return inCluster;
    throw new ConfigError(
      "No Kubernetes configuration found: KUBECONFIG is not set, ~/.kube/config does not exist, " +
        "and this is not a pod with a service account. Point KUBECONFIG at a kubeconfig file " +
        "(for a local cluster: `npx kubeloop cluster start` prints one).",
    );
  }
  const fast = found.text !== undefined && plainConfig(found.text, found.source, options.context);
  if (fast) return fast;
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  try {
    if (found.text === undefined) kc.loadFromDefault();
    else {
      // The text already read, with relative file paths resolved as `loadFromFile` does.
      kc.loadFromString(found.text);
      if (found.file) kc.makePathsAbsolute(dirname(found.file));
    }
  } catch (error) {
    throw new ConfigError(`Could not read the Kubernetes configuration: ${(error as Error).message}`);
  }
  if (options.context) {
    const names = kc.getContexts().map((c) => c.name);
    if (!names.includes(options.context)) {
      throw new ConfigError(
        `Context "${options.context}" is not in ${found.source} (it has: ${names.join(", ") || "none"})`,
      );
    }
    kc.setCurrentContext(options.context);
  }
  return fromKubeConfig(kc, found.source);
}

/**
 * The kubeconfig `loadConfig` reads, each file read once: the text of a single file (or the text
 * given), or no text when `$KUBECONFIG` merges several files (client-node's `loadFromDefault`
 * reads those); `undefined` when there is none at all.
 */
function findKubeconfig(
  options: LoadConfigOptions,
): { source: string; text?: string; file?: string } | undefined {
  if (options.kubeconfigText !== undefined)
    return { source: "kubeconfig text", text: options.kubeconfigText };
  let file: string;
  if (options.kubeconfig) {
    if (!existsSync(options.kubeconfig))
      throw new ConfigError(`kubeconfig ${options.kubeconfig} does not exist`);
    file = options.kubeconfig;
  } else if (process.env.KUBECONFIG) {
    const files = process.env.KUBECONFIG.split(":").filter(Boolean);
    const present = files.filter((name) => existsSync(name));
    if (present.length === 0) {
      throw new ConfigError(`KUBECONFIG names ${files.join(", ")}, and none of them exists`);
    }
    if (files.length > 1) return { source: process.env.KUBECONFIG };
    file = files[0] as string;
  } else {
    file = join(homedir(), ".kube", "config");
    if (!existsSync(file)) return undefined;
  }
  try {
    return { source: file, text: readFileSync(file, "utf8"), file };
  } catch (error) {
    throw new ConfigError(`Could not read the Kubernetes configuration: ${(error as Error).message}`);
  }
}

async function fromKubeConfig(kc: KubeConfig, source: string): Promise<ClusterConfig> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new ConfigError(
      `${source} has no usable current context (current-context: "${kc.getCurrentContext() || ""}"); ` +
        "set one with `kubectl config use-context` or pass `context`",
    );
  }
  const server = serverOf(cluster.server);
  if (!server) {
    throw new ConfigError(
      `Cluster "${cluster.name}" in ${source} has an invalid server address: "${cluster.server}"`,
    );
  }
  const options: RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(options);
  } catch (error) {
    throw new ConfigError(`Could not load the credentials of ${source}: ${(error as Error).message}`);
  }
  const user = kc.getCurrentUser();
  const dynamic = Boolean(user?.exec || user?.authProvider);
  const header = headerOf(options);
  const context = kc.getContextObject(kc.getCurrentContext());
  return {
    server,
    tls: tlsOf(options.rejectUnauthorized !== false, {
      ca: options.ca as string | Buffer | undefined,
      cert: options.cert as string | Buffer | undefined,
      key: options.key as string | Buffer | undefined,
      servername: options.servername,
    }),
    namespace: context?.namespace || "default",
    source,
    authorization: dynamic
      ? refreshing(async () => {
          const fresh: RequestOptions = {};
          await kc.applyToHTTPSOptions(fresh);
          return headerOf(fresh);
        }, header) // the credentials just loaded serve the first 10 s
      : async () => header,
  };
}

function headerOf(options: RequestOptions): string | undefined {
  const headers = (options.headers ?? {}) as Record<string, unknown>;
  const value = headers.Authorization ?? headers.authorization;
  return typeof value === "string" ? value : undefined;
}

/** `https://host:port[/path]` without a trailing slash, or `undefined` when `server` is not a URL. */
function serverOf(server: string): string | undefined {
  try {
    const url = new URL(server);
    return url.origin + url.pathname.replace(/\/$/, "");
  } catch {
    return undefined;
  }
}

/** The TLS options, without the pieces the source leaves out. */
function tlsOf(
  rejectUnauthorized: boolean,
  material: Omit<ClusterConfig["tls"], "rejectUnauthorized">,
): ClusterConfig["tls"] {
  return { rejectUnauthorized, ...Object.fromEntries(Object.entries(material).filter(([, value]) => value)) };
}

/** An Authorization header that `read` re-evaluates at most every {@link AUTH_REFRESH_MS}. */
function refreshing(
  read: () => string | undefined | Promise<string | undefined>,
  first?: string,
): () => Promise<string | undefined> {
  let cached: { value: string | undefined; at: number } | undefined =
    first === undefined ? undefined : { value: first, at: Date.now() };
  return async () => {
    if (!cached || Date.now() - cached.at >= AUTH_REFRESH_MS)
      cached = { value: await read(), at: Date.now() };
    return cached.value;
  };
}

const PLAIN_CLUSTER_KEYS = new Set([
  "server",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "extensions",
]);
const PLAIN_USER_KEYS = new Set(["client-certificate-data", "client-key-data", "token"]);

/**
 * The configuration of a plain kubeconfig, or `undefined` for anything else (exec plugins, auth
 * providers, files named in it, proxies, a context that is not there…), which client-node handles.
 */
function plainConfig(text: string, source: string, contextName?: string): ClusterConfig | undefined {
  const record = (value: unknown): Record<string, unknown> | undefined =>
    value && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  const named = (list: unknown, name: unknown, field: string) =>
    Array.isArray(list) ? record(list.find((entry) => record(entry)?.name === name)?.[field]) : undefined;
  let doc: Record<string, unknown> | undefined;
  try {
    doc = record(parse(text));
  } catch {
    return undefined;
  }
  const context = named(doc?.contexts, contextName ?? doc?.["current-context"], "context");
  const cluster = named(doc?.clusters, context?.cluster, "cluster");
  const user = context?.user === undefined ? {} : named(doc?.users, context.user, "user");
  if (!context || !cluster || !user || typeof cluster.server !== "string") return undefined;
  if (!Object.keys(cluster).every((key) => PLAIN_CLUSTER_KEYS.has(key))) return undefined;
  if (!Object.keys(user).every((key) => PLAIN_USER_KEYS.has(key))) return undefined;
  const server = serverOf(cluster.server);
  if (!server) return undefined;
  const data = (value: unknown) => (typeof value === "string" ? Buffer.from(value, "base64") : undefined);
  const servername = cluster["tls-server-name"];
  const header = typeof user.token === "string" ? `Bearer ${user.token}` : undefined;
  return {
    server,
    tls: tlsOf(cluster["insecure-skip-tls-verify"] !== true, {
      ca: data(cluster["certificate-authority-data"]),
      cert: data(user["client-certificate-data"]),
      key: data(user["client-key-data"]),
      servername: typeof servername === "string" ? servername : undefined,
    }),
    namespace: typeof context.namespace === "string" && context.namespace ? context.namespace : "default",
    source,
    authorization: async () => header,
  };
}

/**
 * A pod's service account, as client-go's `rest.InClusterConfig` reads it: the API server from
 * `KUBERNETES_SERVICE_HOST`/`_PORT`, its CA and the namespace from the mounted folder, and the
 * token re-read from its file every 10 s, because the kubelet rotates it (a bound token lives an
 * hour by default and is replaced well before it expires). `undefined` outside a pod.
 */
export function inClusterConfig(
  dir: string = SERVICE_ACCOUNT_DIR,
  env: NodeJS.ProcessEnv = process.env,
): ClusterConfig | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const tokenFile = join(dir, "token");
  if (!host || !port || !existsSync(tokenFile)) return undefined;
  const read = (file: string) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file)) : undefined);
  const readToken = () => `Bearer ${readFileSync(tokenFile, "utf8").trim()}`;
  let token = readToken();
  return {
    server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    tls: tlsOf(true, { ca: read("ca.crt") }),
    namespace: read("namespace")?.toString("utf8").trim() || "default",
    source: "in-cluster service account",
    authorization: refreshing(() => {
      try {
        token = readToken();
      } catch {
        // Mid-rotation (the kubelet swaps a symlink): keep the token we have and try again later.
      }
      return token;
    }, token),
  };
}
