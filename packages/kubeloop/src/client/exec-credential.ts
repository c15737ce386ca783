import { spawn } from "node:child_process";
import { ConfigError } from "./errors.js";

/**
 * Exec credential plugins (`users[].user.exec`), as client-go runs them: the command with its args,
 * the process environment plus the entry's `env`, and `KUBERNETES_EXEC_INFO` describing the call
 * (with the cluster when `provideClusterInfo` is set). The plugin prints an `ExecCredential`; its
 * token (or client certificate) is kept until `expirationTimestamp`, or until the server answers
 * 401. Runs are shared: many requests waiting on an expired credential start one plugin.
 */

export const EXEC_API_VERSIONS = new Set([
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
]);

/** What client-go appends when a plugin is not installed. */
const INSTALL_HINT_HELP =
  "It looks like you are trying to use a client-go credential plugin that is not installed.\n\n" +
  "To learn more about this feature, consult the documentation available at:\n" +
  "      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins";

export interface ExecConfig {
  /** The user entry's name, for messages. */
  user: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  apiVersion: string;
  installHint?: string;
  /** The `spec.cluster` the plugin gets when `provideClusterInfo` is set. */
  cluster?: Record<string, unknown>;
}

export interface ExecResult {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  /** Epoch milliseconds, or `undefined` for a credential that does not expire. */
  expiresAt?: number;
}

/** A credential from the plugin, run again once the last one expired or was refused. */
export class ExecCredentials {
  private current: ExecResult | undefined;
  private running: Promise<ExecResult> | undefined;

  constructor(private readonly config: ExecConfig) {}

  async get(): Promise<ExecResult> {
    const current = this.current;
    if (current && (current.expiresAt === undefined || current.expiresAt > Date.now())) return current;
    this.running ??= runExecPlugin(this.config).then(
      (result) => {
        this.current = result;
        this.running = undefined;
        return result;
      },
      (error: unknown) => {
        this.running = undefined;
        throw error;
      },
    );
    return this.running;
  }

  /** The server refused the credential: the next request runs the plugin again. */
  invalidate(): void {
    this.current = undefined;
  }
}

export function runExecPlugin(config: ExecConfig): Promise<ExecResult> {
  const info = {
    apiVersion: config.apiVersion,
    kind: "ExecCredential",
    // The plugin never gets a terminal: an operator has none to give it.
    spec: { interactive: false, ...(config.cluster ? { cluster: config.cluster } : {}) },
  };
  const what = `The exec credential plugin of user "${config.user}" (${config.command})`;
  return new Promise((resolve, reject) => {
    const child = spawn(config.command, config.args, {
      env: { ...process.env, ...config.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") {
        const hint = config.installHint ? `\n\n${config.installHint}` : "";
        reject(
          new ConfigError(`exec: executable ${config.command} not found\n\n${INSTALL_HINT_HELP}${hint}`),
        );
      } else reject(new ConfigError(`${what} could not be run: ${error.message}`));
    });
    child.on("close", (code) => {
      if (code !== 0) {
        const output = stderr.trim() ? `: ${stderr.trim()}` : "";
        reject(new ConfigError(`${what} failed with exit code ${code}${output}`));
        return;
      }
      try {
        resolve(parseExecCredential(stdout, config.apiVersion));
      } catch (error) {
        reject(new ConfigError(`${what} printed an unusable credential: ${(error as Error).message}`));
      }
    });
  });
}

function parseExecCredential(stdout: string, apiVersion: string): ExecResult {
  let doc: {
    apiVersion?: unknown;
    kind?: unknown;
    status?: Record<string, unknown>;
  };
  try {
    doc = JSON.parse(stdout);
  } catch {
    throw new Error(`its output is not JSON: ${stdout.slice(0, 200)}`);
  }
  if (doc.kind !== "ExecCredential")
    throw new Error(`its output has kind ${String(doc.kind)}, not ExecCredential`);
  if (doc.apiVersion !== apiVersion)
    throw new Error(`it is configured for apiVersion ${apiVersion} but printed ${String(doc.apiVersion)}`);
  const status = doc.status;
  if (!status) throw new Error("it has no status");
  const text = (key: string) =>
    typeof status[key] === "string" && status[key] ? (status[key] as string) : undefined;
  const token = text("token");
  const clientCertificateData = text("clientCertificateData");
  const clientKeyData = text("clientKeyData");
  if (Boolean(clientCertificateData) !== Boolean(clientKeyData))
    throw new Error("it has a client certificate without a key, or a key without a certificate");
  if (!token && !clientCertificateData)
    throw new Error("it has neither a token nor a client certificate and key");
  const expiry = text("expirationTimestamp");
  const expiresAt = expiry ? Date.parse(expiry) : undefined;
  if (expiresAt !== undefined && Number.isNaN(expiresAt))
    throw new Error(`its expirationTimestamp "${expiry}" is not a time`);
  return {
    ...(token ? { token } : {}),
    ...(clientCertificateData ? { clientCertificateData, clientKeyData } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}
