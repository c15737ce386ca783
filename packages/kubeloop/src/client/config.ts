import { existsSync, readFileSync } from "node:fs";
import type { RequestOptions } from "node:https";
import { homedir } from "node:os";
import { join } from "node:path";
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
  const plain = plainSource(options);
  const fast = plain && plainConfig(plain.text, plain.source, options.context);
  if (fast) return fast;
  const noKubeconfig =
    options.kubeconfigText === undefined &&
    !options.kubeconfig &&
    !process.env.KUBECONFIG &&
    !existsSync(join(homedir(), ".kube", "config"));
  const inCluster = noKubeconfig ? inClusterConfig() : undefined;
  if (inCluster) return inCluster;
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  let source: string;
  try {
    if (options.kubeconfigText !== undefined) {
      kc.loadFromString(options.kubeconfigText);
      source = "kubeconfig text";
    } else if (options.kubeconfig) {
      if (!existsSync(options.kubeconfig))
        throw new ConfigError(`kubeconfig ${options.kubeconfig} does not exist`);
      kc.loadFromFile(options.kubeconfig);
      source = options.kubeconfig;
    } else if (process.env.KUBECONFIG) {
      const files = process.env.KUBECONFIG.split(":").filter(Boolean);
      const missing = files.filter((file) => !existsSync(file));
      if (missing.length === files.length) {
        throw new ConfigError(`KUBECONFIG names ${files.join(", ")}, and none of them exists`);
      }
      kc.loadFromDefault();
      source = process.env.KUBECONFIG;
    } else if (existsSync(join(homedir(), ".kube", "config"))) {
      source = join(homedir(), ".kube", "config");
      kc.loadFromFile(source);
    } else {
      throw new ConfigError(
        "No Kubernetes configuration found: KUBECONFIG is not set, ~/.kube/config does not exist, " +
          "and this is not a pod with a service account. Point KUBECONFIG at a kubeconfig file " +
          "(for a local cluster: `npx kubeloop cluster start` prints one).",
      );
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`Could not read the Kubernetes configuration: ${(error as Error).message}`);
  }
  if (options.context) {
    const names = kc.getContexts().map((c) => c.name);
    if (!names.includes(options.context)) {
      throw new ConfigError(
        `Context "${options.context}" is not in ${source} (it has: ${names.join(", ") || "none"})`,
      );
    }
    kc.setCurrentContext(options.context);
  }
  return fromKubeConfig(kc, source);
}

async function fromKubeConfig(kc: KubeConfig, source: string): Promise<ClusterConfig> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new ConfigError(
      `${source} has no usable current context (current-context: "${kc.getCurrentContext() || ""}"); ` +
        "set one with `kubectl config use-context` or pass `context`",
    );
  }
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
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
  const staticHeader = headerOf(options);
  let cached: { value: string | undefined; at: number } | undefined;
  const authorization = async (): Promise<string | undefined> => {
    if (!dynamic) return staticHeader;
    if (cached && Date.now() - cached.at < AUTH_REFRESH_MS) return cached.value;
    const fresh: RequestOptions = {};
    await kc.applyToHTTPSOptions(fresh);
    cached = { value: headerOf(fresh), at: Date.now() };
    return cached.value;
  };
  const context = kc.getContextObject(kc.getCurrentContext());
  const tls: ClusterConfig["tls"] = { rejectUnauthorized: options.rejectUnauthorized !== false };
  if (options.ca) tls.ca = options.ca as string | Buffer;
  if (options.cert) tls.cert = options.cert as string | Buffer;
  if (options.key) tls.key = options.key as string | Buffer;
  if (options.servername) tls.servername = options.servername;
  return {
    server: url.origin + url.pathname.replace(/\/$/, ""),
    tls,
    namespace: context?.namespace || "default",
    source,
    authorization,
  };
}

function headerOf(options: RequestOptions): string | undefined {
  const headers = (options.headers ?? {}) as Record<string, unknown>;
  const value = headers.Authorization ?? headers.authorization;
  return typeof value === "string" ? value : undefined;
}

/** The one kubeconfig file (or text) `loadConfig` would read, when it is a single one. */
function plainSource(options: LoadConfigOptions): { text: string; source: string } | undefined {
  try {
    if (options.kubeconfigText !== undefined)
      return { text: options.kubeconfigText, source: "kubeconfig text" };
    const file =
      options.kubeconfig ??
      (process.env.KUBECONFIG
        ? process.env.KUBECONFIG.split(":").filter(Boolean)
        : [join(homedir(), ".kube", "config")]);
    const files = typeof file === "string" ? [file] : file;
    if (files.length !== 1 || !files[0] || !existsSync(files[0])) return undefined;
    return { text: readFileSync(files[0], "utf8"), source: files[0] };
  } catch {
    return undefined;
  }
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
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    return undefined;
  }
  const data = (value: unknown) => (typeof value === "string" ? Buffer.from(value, "base64") : undefined);
  const tls: ClusterConfig["tls"] = { rejectUnauthorized: cluster["insecure-skip-tls-verify"] !== true };
  const ca = data(cluster["certificate-authority-data"]);
  const cert = data(user["client-certificate-data"]);
  const key = data(user["client-key-data"]);
  if (ca) tls.ca = ca;
  if (cert) tls.cert = cert;
  if (key) tls.key = key;
  if (typeof cluster["tls-server-name"] === "string") tls.servername = cluster["tls-server-name"];
  const header = typeof user.token === "string" ? `Bearer ${user.token}` : undefined;
  return {
    server: url.origin + url.pathname.replace(/\/$/, ""),
    tls,
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
  let cached = { value: readToken(), at: Date.now() };
  const authorization = async () => {
    if (Date.now() - cached.at >= AUTH_REFRESH_MS) {
      try {
        cached = { value: readToken(), at: Date.now() };
      } catch {
        // Mid-rotation (the kubelet swaps a symlink): keep the token we have and try again later.
      }
    }
    return cached.value;
  };
  const ca = read("ca.crt");
  return {
    server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    tls: { rejectUnauthorized: true, ...(ca ? { ca } : {}) },
    namespace: read("namespace")?.toString("utf8").trim() || "default",
    source: "in-cluster service account",
    authorization,
  };
}
