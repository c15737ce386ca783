import { existsSync, readFileSync } from "node:fs";
import type { RequestOptions } from "node:https";
import { homedir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "./errors.js";
import { EXEC_API_VERSIONS, type ExecConfig, ExecCredentials } from "./exec-credential.js";
import {
  entryPath,
  execCommandPath,
  type KubeconfigEntry,
  type KubeconfigSource,
  kubeconfigFiles,
  type MergedKubeconfig,
  mergeKubeconfigs,
  readKubeconfigFile,
  record,
} from "./kubeconfig.js";
import { parseProxyUrl, proxyFromEnvironment } from "./proxy.js";

/**
 * Where a client connects and how it authenticates, read from kubeconfig files the way client-go
 * reads them (see README: every field client-go reads is honoured or refused with a ConfigError,
 * never dropped into an anonymous connection). The loader is kubeloop's own (kubeconfig.ts,
 * exec-credential.ts, proxy.ts): @kubernetes/client-node's `KubeConfig` reads some fields under
 * other names (`token-file`), drops others (`as-groups`, `installHint`, `provideClusterInfo`), and
 * costs every process ~0.4 s and ~56 MiB to import; it is loaded only for an OIDC `auth-provider`.
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
  /**
   * The proxy every connection goes through (`http://`, `https://` or `socks5://`): the cluster's
   * `proxy-url`, else `HTTPS_PROXY`/`HTTP_PROXY` unless `NO_PROXY` (or a loopback server) says not.
   */
  proxy?: string;
  /** Whom every request acts as (the kubeconfig's `as`, `as-uid`, `as-groups`, `as-user-extra`). */
  impersonate?: Impersonation;
  /** The namespace the context names (default `default`); used only where the caller asks for it. */
  namespace: string;
  /** Where the configuration came from, for messages (`/path/to/kubeconfig`, `in-cluster`). */
  source: string;
  /** The Authorization header for the next request (a fresh token when the source rotates). */
  authorization(): Promise<string | undefined>;
  /** The server answered 401: credentials that can be fetched again (exec plugins) are, next time. */
  credentialsRejected?(): void;
}

/**
 * The `Impersonate-*` headers: act as `user` (the caller needs the `impersonate` verb).
 *
 * @example
 * ```ts
 * import { Client } from "kubeloop/client";
 *
 * // What may the operator's service account do? Ask as it, like `kubectl --as`.
 * const asOperator = await Client.connect({
 *   impersonate: { user: "system:serviceaccount:ops:operator", groups: ["system:serviceaccounts"] },
 * });
 * ```
 */
export interface Impersonation {
  user: string;
  uid?: string;
  groups?: string[];
  /** `Impersonate-Extra-<key>` headers, e.g. `{ scopes: ["view"] }`. */
  extra?: Record<string, string[]>;
}

/** Where `loadConfig` reads the cluster's address and credentials from. */
export interface LoadConfigOptions {
  /** A kubeconfig file. Default: `$KUBECONFIG` (colon-separated files are merged), else `~/.kube/config`. */
  kubeconfig?: string;
  /** The kubeconfig's text itself, instead of a file. */
  kubeconfigText?: string;
  /** A context other than the current one. */
  context?: string;
}

/** Token files and OIDC tokens are re-read at most this often (client-go: every minute). */
const AUTH_REFRESH_MS = 10_000;
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** The cluster extension an exec plugin gets as `spec.cluster.config` (client-go's name). */
const EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec";

/** Every user field client-go reads; anything else is unknown to both. */
const USER_FIELDS = new Set([
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "token",
  "tokenFile",
  "as",
  "as-uid",
  "as-groups",
  "as-user-extra",
  "username",
  "password",
  "auth-provider",
  "exec",
  "extensions",
]);

/**
 * Loads the configuration the way kubectl does: an explicit file or text, `$KUBECONFIG`,
 * `~/.kube/config`, and inside a pod the service account. Unlike client-node's `loadFromDefault`,
 * finding nothing is an error, never a silent `http://localhost:8080`.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<ClusterConfig> {
  const found = findKubeconfigs(options);
  if (!found) {
    const inCluster = inClusterConfig();
    if (inCluster) return inCluster;
    throw new ConfigError(
      "No Kubernetes configuration found: KUBECONFIG is not set, ~/.kube/config does not exist, " +
        "and this is not a pod with a service account. Point KUBECONFIG at a kubeconfig file " +
        "(for a local cluster: `npx kubeloop cluster start` prints one).",
    );
  }
  return fromKubeconfig(await mergeKubeconfigs(found.sources), found.source, options.context);
}

/** The kubeconfig texts `loadConfig` reads, each file once; `undefined` when there is none at all. */
function findKubeconfigs(
  options: LoadConfigOptions,
): { source: string; sources: KubeconfigSource[] } | undefined {
  if (options.kubeconfigText !== undefined)
    return { source: "kubeconfig text", sources: [{ text: options.kubeconfigText }] };
  if (options.kubeconfig) {
    if (!existsSync(options.kubeconfig))
      throw new ConfigError(`kubeconfig ${options.kubeconfig} does not exist`);
    return { source: options.kubeconfig, sources: [readKubeconfigFile(options.kubeconfig)] };
  }
  if (process.env.KUBECONFIG) {
    const files = kubeconfigFiles(process.env.KUBECONFIG);
    return { source: files.join(files.length > 1 ? " + " : ""), sources: files.map(readKubeconfigFile) };
  }
  const file = join(homedir(), ".kube", "config");
  return existsSync(file) ? { source: file, sources: [readKubeconfigFile(file)] } : undefined;
}

async function fromKubeconfig(
  merged: MergedKubeconfig,
  source: string,
  contextName: string | undefined,
): Promise<ClusterConfig> {
  const name = contextName ?? merged.currentContext;
  const context = name === undefined ? undefined : merged.contexts.get(name);
  if (!context) {
    if (contextName !== undefined) {
      const names = [...merged.contexts.keys()];
      throw new ConfigError(
        `Context "${contextName}" is not in ${source} (it has: ${names.join(", ") || "none"})`,
      );
    }
    throw new ConfigError(
      `${source} has no usable current context (current-context: "${name ?? ""}"); ` +
        "set one with `kubectl config use-context` or pass `context`",
    );
  }
  const clusterName = context.fields.cluster;
  const cluster = typeof clusterName === "string" ? merged.clusters.get(clusterName) : undefined;
  if (!cluster)
    throw new ConfigError(
      `Context "${context.name}" in ${source} names cluster "${String(clusterName ?? "")}", which is not defined`,
    );
  const userName = context.fields.user;
  const user = typeof userName === "string" && userName ? merged.users.get(userName) : undefined;
  if (typeof userName === "string" && userName && !user)
    throw new ConfigError(
      `Context "${context.name}" in ${source} names user "${userName}", which is not defined`,
    );
  const namespace = context.fields.namespace;
  const connection = clusterConnection(cluster, source);
  const auth = await userCredentials(user, cluster, connection, source);
  return {
    server: connection.server,
    tls: tlsOf(connection.verify, {
      ca: connection.ca,
      cert: auth.cert,
      key: auth.key,
      servername: connection.servername,
    }),
    ...(connection.proxy ? { proxy: connection.proxy } : {}),
    ...(auth.impersonate ? { impersonate: auth.impersonate } : {}),
    namespace: typeof namespace === "string" && namespace ? namespace : "default",
    source,
    authorization: auth.authorization,
    ...(auth.credentialsRejected ? { credentialsRejected: auth.credentialsRejected } : {}),
  };
}

interface Connection {
  server: string;
  verify: boolean;
  ca?: Buffer;
  servername?: string;
  proxy?: string;
  /** The cluster as an exec plugin with `provideClusterInfo` sees it. */
  execInfo: Record<string, unknown>;
}

function clusterConnection(cluster: KubeconfigEntry, source: string): Connection {
  const f = cluster.fields;
  const what = `Cluster "${cluster.name}" in ${source}`;
  const server = typeof f.server === "string" ? serverOf(f.server) : undefined;
  if (!server) throw new ConfigError(`${what} has an invalid server address: "${String(f.server ?? "")}"`);
  const ca = fileOrData(cluster, "certificate-authority", "certificate-authority-data", what);
  const verify = f["insecure-skip-tls-verify"] !== true;
  if (!verify && ca)
    throw new ConfigError(
      `${what} sets insecure-skip-tls-verify and a certificate authority; client-go refuses both, remove one`,
    );
  const servername = optionalString(f, "tls-server-name", what);
  const proxyUrl = optionalString(f, "proxy-url", what);
  const proxy = proxyUrl ? parseProxyUrl(proxyUrl, `${what}: proxy-url`) : proxyFromEnvironment(server);
  if (f["disable-compression"] !== undefined && typeof f["disable-compression"] !== "boolean")
    throw new ConfigError(`${what}: disable-compression must be true or false`);
  const extensions = Array.isArray(f.extensions) ? f.extensions : [];
  const execExtension = record(extensions.find((e) => record(e)?.name === EXEC_CLUSTER_EXTENSION))?.extension;
  const execInfo: Record<string, unknown> = {
    server: f.server,
    ...(servername ? { "tls-server-name": servername } : {}),
    ...(!verify ? { "insecure-skip-tls-verify": true } : {}),
    ...(ca ? { "certificate-authority-data": ca.toString("base64") } : {}),
    ...(proxyUrl ? { "proxy-url": proxyUrl } : {}),
    ...(f["disable-compression"] === true ? { "disable-compression": true } : {}),
    ...(execExtension !== undefined ? { config: execExtension } : {}),
  };
  return {
    server,
    verify,
    ...(ca ? { ca } : {}),
    ...(servername ? { servername } : {}),
    ...(proxy ? { proxy } : {}),
    execInfo,
  };
}

interface Credentials {
  cert?: Buffer;
  key?: Buffer;
  impersonate?: Impersonation;
  authorization: () => Promise<string | undefined>;
  credentialsRejected?: () => void;
}

async function userCredentials(
  user: KubeconfigEntry | undefined,
  cluster: KubeconfigEntry,
  connection: Connection,
  source: string,
): Promise<Credentials> {
  if (!user) return { authorization: async () => undefined };
  const f = user.fields;
  const what = `User "${user.name}" in ${source}`;
  const cert = fileOrData(user, "client-certificate", "client-certificate-data", what);
  const key = fileOrData(user, "client-key", "client-key-data", what);
  if (Boolean(cert) !== Boolean(key))
    throw new ConfigError(`${what} has a client certificate without a key or a key without a certificate`);
  const token = optionalString(f, "token", what);
  const tokenFile = optionalString(f, "tokenFile", what);
  const username = optionalString(f, "username", what);
  const password = optionalString(f, "password", what);
  const exec = record(f.exec);
  const authProvider = record(f["auth-provider"]);
  const methods = [
    token || tokenFile ? "token" : undefined,
    username || password ? "basic auth (username/password)" : undefined,
    exec ? "exec" : undefined,
    authProvider ? "auth-provider" : undefined,
  ].filter(Boolean);
  if (methods.length > 1)
    throw new ConfigError(`${what} has more than one way to authenticate (${methods.join(", ")}); keep one`);
  const credentials: Credentials = {
    ...(cert && key ? { cert, key } : {}),
    ...impersonationOf(f, what),
    authorization: async () => undefined,
  };
  if (tokenFile) {
    credentials.authorization = tokenFileAuthorization(entryPath(user, tokenFile), what);
  } else if (token) {
    const header = `Bearer ${token}`;
    credentials.authorization = async () => header;
  } else if (username || password) {
    const header = `Basic ${Buffer.from(`${username ?? ""}:${password ?? ""}`).toString("base64")}`;
    credentials.authorization = async () => header;
  } else if (exec) {
    const plugin = new ExecCredentials(execConfig(user, exec, connection, what));
    const first = await plugin.get();
    if (first.clientCertificateData && first.clientKeyData) {
      credentials.cert = Buffer.from(first.clientCertificateData);
      credentials.key = Buffer.from(first.clientKeyData);
    }
    credentials.authorization = async () => {
      const { token: fresh } = await plugin.get();
      return fresh ? `Bearer ${fresh}` : undefined;
    };
    credentials.credentialsRejected = () => plugin.invalidate();
  } else if (authProvider) {
    credentials.authorization = await authProviderHeader(user, authProvider, cluster, connection, what);
  } else if (!cert) {
    const unknown = Object.keys(f).filter((field) => !USER_FIELDS.has(field));
    if (unknown.length)
      throw new ConfigError(
        `${what} has no credentials kubeloop can use, only fields client-go does not read either ` +
          `(${unknown.join(", ")}); rather than connect as system:anonymous, kubeloop stops here. ` +
          `Credentials are one of: client-certificate(-data) + client-key(-data), token, tokenFile, ` +
          "username + password, exec, auth-provider",
      );
  }
  return credentials;
}

/** A bearer token read from `path`, and read again as it rotates (a projected service account token). */
function tokenFileAuthorization(path: string, what: string): () => Promise<string | undefined> {
  const read = () => `Bearer ${readFileSync(path, "utf8").trim()}`;
  let header: string;
  try {
    header = read();
  } catch (error) {
    throw new ConfigError(`${what}: tokenFile ${path} cannot be read: ${(error as Error).message}`);
  }
  return refreshing(() => {
    try {
      header = read();
    } catch {
      // Mid-rotation: keep the token we have and try again later.
    }
    return header;
  }, header);
}

function impersonationOf(f: Record<string, unknown>, what: string): { impersonate?: Impersonation } {
  const user = optionalString(f, "as", what);
  const uid = optionalString(f, "as-uid", what);
  const groups = f["as-groups"];
  const extra = f["as-user-extra"];
  if (
    groups !== undefined &&
    groups !== null &&
    !(Array.isArray(groups) && groups.every((g) => typeof g === "string"))
  )
    throw new ConfigError(`${what}: as-groups must be a list of group names`);
  const extraMap = extra === undefined || extra === null ? undefined : record(extra);
  if (
    (extra !== undefined && extra !== null && !extraMap) ||
    Object.values(extraMap ?? {}).some((v) => !Array.isArray(v) || !v.every((s) => typeof s === "string"))
  )
    throw new ConfigError(`${what}: as-user-extra must map each key to a list of strings`);
  const hasGroups = Array.isArray(groups) && groups.length > 0;
  const hasExtra = extraMap !== undefined && Object.keys(extraMap).length > 0;
  if (!user) {
    if (uid || hasGroups || hasExtra)
      throw new ConfigError(
        `${what} sets as-uid, as-groups or as-user-extra without \`as\`; the API server needs the user to impersonate`,
      );
    return {};
  }
  return {
    impersonate: {
      user,
      ...(uid ? { uid } : {}),
      ...(hasGroups ? { groups: groups as string[] } : {}),
      ...(hasExtra ? { extra: extraMap as Record<string, string[]> } : {}),
    },
  };
}

function execConfig(
  user: KubeconfigEntry,
  exec: Record<string, unknown>,
  connection: Connection,
  what: string,
): ExecConfig {
  const command = exec.command;
  if (typeof command !== "string" || !command) throw new ConfigError(`${what}: exec needs a command`);
  const apiVersion = exec.apiVersion;
  if (typeof apiVersion !== "string" || !EXEC_API_VERSIONS.has(apiVersion))
    throw new ConfigError(
      `${what}: exec apiVersion must be one of ${[...EXEC_API_VERSIONS].join(", ")} (got "${String(apiVersion ?? "")}")`,
    );
  const mode = exec.interactiveMode;
  if (mode === undefined && apiVersion === "client.authentication.k8s.io/v1")
    throw new ConfigError(
      `${what}: exec needs interactiveMode with apiVersion client.authentication.k8s.io/v1 (as in client-go); ` +
        "add `interactiveMode: Never` (or IfAvailable)",
    );
  if (mode !== undefined && mode !== "Never" && mode !== "IfAvailable" && mode !== "Always")
    throw new ConfigError(
      `${what}: exec interactiveMode must be Never, IfAvailable or Always (got "${String(mode)}")`,
    );
  if (mode === "Always")
    throw new ConfigError(
      `${what}: the exec plugin needs a terminal (interactiveMode: Always), which a client library cannot give it; ` +
        "use a plugin mode that runs without one (Never or IfAvailable)",
    );
  const args = exec.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string"))
    throw new ConfigError(`${what}: exec args must be a list of strings`);
  const env: Record<string, string> = {};
  for (const item of Array.isArray(exec.env) ? exec.env : []) {
    const entry = record(item);
    if (typeof entry?.name !== "string" || !entry.name)
      throw new ConfigError(`${what}: every exec env entry needs a name`);
    env[entry.name] = typeof entry.value === "string" ? entry.value : "";
  }
  const installHint = exec.installHint;
  return {
    user: user.name,
    command: execCommandPath(user, command),
    args: args as string[],
    env,
    apiVersion,
    ...(typeof installHint === "string" && installHint ? { installHint } : {}),
    ...(exec.provideClusterInfo === true ? { cluster: connection.execInfo } : {}),
  };
}

/** client-go's in-tree auth providers: only `oidc` remains; gcp and azure became exec plugins. */
async function authProviderHeader(
  user: KubeconfigEntry,
  provider: Record<string, unknown>,
  cluster: KubeconfigEntry,
  connection: Connection,
  what: string,
): Promise<() => Promise<string | undefined>> {
  const name = provider.name;
  if (name === "gcp")
    throw new ConfigError(
      `${what}: the gcp auth provider has been removed from client-go; use the "gke-gcloud-auth-plugin" ` +
        "exec plugin instead (https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke)",
    );
  if (name === "azure")
    throw new ConfigError(
      `${what}: the azure auth provider has been removed from client-go; use the kubelogin exec plugin ` +
        "instead (https://github.com/Azure/kubelogin)",
    );
  if (name !== "oidc")
    throw new ConfigError(`${what}: no auth provider named "${String(name)}" (client-go knows only "oidc")`);
  // OIDC (refresh tokens against the issuer) is client-node's.
  const { KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: cluster.name, server: connection.server, skipTLSVerify: !connection.verify }],
    users: [{ name: user.name, authProvider: provider }],
    contexts: [{ name: "oidc", cluster: cluster.name, user: user.name }],
    currentContext: "oidc",
  });
  const read = async () => {
    const options: RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    return headerOf(options);
  };
  let first: string | undefined;
  try {
    first = await read();
  } catch (error) {
    throw new ConfigError(`${what}: the oidc auth provider failed: ${(error as Error).message}`);
  }
  return refreshing(read, first);
}

function headerOf(options: RequestOptions): string | undefined {
  const headers = (options.headers ?? {}) as Record<string, unknown>;
  const value = headers.Authorization ?? headers.authorization;
  return typeof value === "string" ? value : undefined;
}

function optionalString(fields: Record<string, unknown>, key: string, what: string): string | undefined {
  const value = fields[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new ConfigError(`${what}: ${key} must be a string`);
  return value;
}

/** A file field and its inline `-data` twin: the bytes of whichever is set; both set is an error. */
function fileOrData(
  entry: KubeconfigEntry,
  fileKey: string,
  dataKey: string,
  what: string,
): Buffer | undefined {
  const file = optionalString(entry.fields, fileKey, what);
  const data = optionalString(entry.fields, dataKey, what);
  if (file && data) throw new ConfigError(`${what} sets both ${fileKey} and ${dataKey}; keep one`);
  if (data) return Buffer.from(data, "base64");
  if (!file) return undefined;
  const path = entryPath(entry, file);
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(`${what}: ${fileKey} ${path} cannot be read: ${(error as Error).message}`);
  }
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
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  // client-go's in-cluster config keeps Go's proxy environment too.
  const proxy = proxyFromEnvironment(server, env);
  return {
    server,
    ...(proxy ? { proxy } : {}),
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
