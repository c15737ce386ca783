import { Client, ConfigError, loadConfig } from "../client/index.js";
import { CliError } from "./errors.js";

/**
 * The cluster a project command works on: the current kubeconfig context, as kubectl would pick it
 * (`$KUBECONFIG`, else ~/.kube/config), checked reachable before anything is written to it, and
 * described in one line so the user always sees where their CRDs and operator are going.
 */
export interface Target {
  client: Client;
  kubeconfig: string | undefined;
  /** `https://host:port` */
  server: string;
  /** `context "kind-dev" (https://127.0.0.1:6443) from ~/.kube/config` */
  description: string;
}

/** How long the reachability check waits: a live API server answers /version in milliseconds. */
const REACH_TIMEOUT_MS = 5_000;

/** Undefined when there is no configuration at all (no KUBECONFIG, no ~/.kube/config). */
export async function currentCluster(kubeconfig?: string): Promise<Target | undefined> {
  let config: Awaited<ReturnType<typeof loadConfig>>;
  try {
    config = await loadConfig(kubeconfig ? { kubeconfig } : {});
  } catch (error) {
    if (error instanceof ConfigError && error.message.startsWith("No Kubernetes configuration found")) {
      return undefined;
    }
    throw new CliError((error as Error).message);
  }
  const context = await contextName(kubeconfig);
  const description = `${context ? `context "${context}" ` : ""}(${config.server}) from ${config.source}`;
  const client = new Client(config, { requestTimeoutMs: REACH_TIMEOUT_MS, maxRetries: 0 });
  try {
    await client.transport.request({ method: "GET", path: "/version" });
  } catch (error) {
    await client.close();
    throw new CliError(
      `no cluster reachable at ${description}: ${(error as Error).message.trim()}\n` +
        "Start one (`npm run cluster`, then export the KUBECONFIG it prints), switch context " +
        "(`kubectl config use-context …`), or unset KUBECONFIG to let `kubeloop run` start a local one.",
    );
  }
  await client.close();
  return {
    client: new Client(config),
    kubeconfig: kubeconfig ?? firstFile(config.source),
    server: config.server,
    description,
  };
}

/** The current cluster, or a CliError that says how to get one (for install, deploy, …). */
export async function requireCluster(what: string): Promise<Target> {
  const target = await currentCluster();
  if (!target) {
    throw new CliError(
      `no cluster to ${what}: KUBECONFIG is not set and ~/.kube/config does not exist. Start a local ` +
        "one with `npm run cluster` (it prints the KUBECONFIG to export), or point KUBECONFIG at yours.",
    );
  }
  return target;
}

/** Loads client-node (a second or more) only here, so init, create, generate and cluster start without it. */
async function contextName(kubeconfig: string | undefined): Promise<string | undefined> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  try {
    const kc = new KubeConfig();
    if (kubeconfig) kc.loadFromFile(kubeconfig);
    else kc.loadFromDefault();
    return kc.getCurrentContext() || undefined;
  } catch {
    return undefined;
  }
}

function firstFile(source: string): string | undefined {
  return source.startsWith("/") ? source.split(":")[0] : undefined;
}
