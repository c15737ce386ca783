import { get as httpGet } from "node:http";
import { get as httpsGet } from "node:https";
import type { AdminHttp } from "../http.js";
import type { ManagedProcess } from "../process.js";

/**
 * What every component of a plane is, and what the plane gives it to start in. Each component's
 * module (etcd.ts, kube-apiserver.ts, …) owns its flags, how it starts and when it is ready; the
 * plane (control-plane.ts) decides the order, the ports, the folder, and stops them.
 */

/** The components of a plane, in start order; `stop()` goes in reverse. */
export type ComponentName =
  | "etcd"
  | "kube-apiserver"
  | "kube-controller-manager"
  | "kube-scheduler"
  | "kwok"
  | "coredns"
  | "registry"
  | NodeComponentName;

/** A process of one real node (`node` profile), e.g. `kubelet-node-0`. */
export type NodeComponentName = `${"node" | "containerd" | "kubelet" | "kube-proxy"}-${string}`;

/** Every component listens on loopback only. */
export const HOST = "127.0.0.1";
/** The Service IP range; its first address is the `kubernetes` Service, so the serving cert names it. */
export const SERVICE_CIDR = "10.0.0.0/24";
export const KUBERNETES_SERVICE_IP = "10.0.0.1";

/** One start attempt of the plane, as its components see it. */
export interface StartContext {
  /** The plane's folder. */
  readonly dir: string;
  /** The admin's API access (system:masters). */
  readonly admin: AdminHttp;
  /** Starts the component's binary with `args`, its output in `logs/<name>.log`. */
  spawn(name: ComponentName, args: string[]): ManagedProcess;
  /** The path of a component's own binary. */
  binary(name: ComponentName): string;
  /** Starts `command` (a path) as the process of component `name`, e.g. a node's through nsenter. */
  spawnCommand(name: ComponentName, command: string, args: string[], env?: NodeJS.ProcessEnv): ManagedProcess;
  /**
   * Polls `check` until it holds, within the attempt's deadline; fails at once, naming the
   * component and quoting its log, when any component dies meanwhile.
   */
  waitUntil(what: string, check: () => Promise<boolean>): Promise<void>;
}

export interface Component {
  readonly name: ComponentName;
  /** Spawns the process with the component's flags. */
  start(context: StartContext): ManagedProcess;
  /** Resolves once the component does its job (answers its health check, has made its objects). */
  ready(context: StartContext): Promise<void>;
}

/**
 * The flags kube-controller-manager and kube-scheduler share: API clients with the admin's
 * kubeconfig, serving their health checks on `port` with a self-signed certificate in `certDir`.
 */
export function apiClientArgs(kubeconfigPath: string, port: number, certDir: string): string[] {
  return [
    `--kubeconfig=${kubeconfigPath}`,
    `--authentication-kubeconfig=${kubeconfigPath}`,
    `--authorization-kubeconfig=${kubeconfigPath}`,
    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
    // A single instance: skipping the election saves the lease's acquire delay.
    "--leader-elect=false",
    `--bind-address=${HOST}`,
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
  ];
}

/** True when `url` answers 200. Health endpoints of local components use self-signed certificates. */
export function probe(url: string): Promise<boolean> {
  return new Promise((resolveProbe) => {
    const get = url.startsWith("https:") ? httpsGet : httpGet;
    const req = get(url, { rejectUnauthorized: false, timeout: 2000 }, (res) => {
      res.resume();
      resolveProbe(res.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolveProbe(false));
  });
}
