import { execFile, spawnSync } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { ControlPlane, type KubectlResult, kubectl, pollUntil } from "kubeloop/testing";
import { locateBinary } from "kubeloop/testing/assets";
import { expect } from "vitest";
import { root } from "./operator.ts";

// What the tests that install the operator as pods share: its image built by `kubeloop build`,
// a node-profile plane, and kubectl, kubeloop and helm against it.

export const NS = "nginx-operator-system";
export const cli = join(root, "../../packages/kubeloop/dist/cli/main.js");
/** The helm the asset cache built (`npm run assets`): the version kubeloop pins, found where kubeloop keeps it. */
export const helmBinary = locateBinary("helm")?.path ?? "helm";
const platform = process.arch === "arm64" ? "linux/arm64" : "linux/amd64";
const run = promisify(execFile);

/** `kubeloop build` of the project in `dir` into `tarball`, named `tag`, for this machine's platform. */
export async function buildImage(dir: string, tarball: string, tag: string): Promise<void> {
  const built = await run(
    process.execPath,
    [cli, "build", dir, "--tarball", tarball, "--tag", tag, "--platform", platform],
    { cwd: root, timeout: 240_000 },
  );
  expect(built.stderr).toContain(`wrote ${tarball}`);
}

/** A one-node plane of the node profile, started while `alongside` (image builds) runs. */
export async function startPlane(alongside: Promise<unknown>): Promise<ControlPlane> {
  const [plane] = await Promise.all([new ControlPlane({ profile: "node", nodes: 1 }).start(), alongside]);
  return plane;
}

export interface Cluster {
  k(args: string[], input?: string): Promise<KubectlResult>;
  jsonpath(args: string[], path: string): Promise<string>;
  /** A command (kubeloop's CLI as `kubeloop`, else a binary) with KUBECONFIG set; expects success. */
  run(command: string, args: string[]): string;
  /** The same, without blocking this process while it runs. */
  start(command: string, args: string[]): Promise<string>;
  wait(check: () => Promise<boolean>, timeoutMs: number, message: string): Promise<void>;
  /** Sets an Nginx's replicas in namespace `site` (a merge patch, as a user's edit). */
  scale(name: string, replicas: number): Promise<KubectlResult>;
  /** The pod holding the operator's leader Lease (its identity is `<pod>_<uuid>`). */
  leader(): Promise<string>;
}

export function cluster(plane: ControlPlane): Cluster {
  const k = (args: string[], input?: string) =>
    kubectl(args, { kubeconfig: plane.kubeconfigPath, ...(input ? { input } : {}) });
  const jsonpath = async (args: string[], path: string) =>
    (await k([...args, "-o", `jsonpath=${path}`])).stdout;
  const command = (name: string, args: string[]): [string, string[]] =>
    name === "kubeloop" ? [process.execPath, [cli, ...args]] : [name, args];
  const options = { cwd: root, env: { ...process.env, KUBECONFIG: plane.kubeconfigPath }, timeout: 240_000 };
  return {
    k,
    jsonpath,
    run(name, args) {
      const result = spawnSync(...command(name, args), { ...options, encoding: "utf8" });
      expect(result.status, `${name} ${args.join(" ")}\n${result.stdout}\n${result.stderr}`).toBe(0);
      return result.stdout;
    },
    async start(name, args) {
      return (await run(...command(name, args), options)).stdout;
    },
    scale: (name, replicas) =>
      k(["-n", "site", "patch", "nginx", name, "--type=merge", "-p", `{"spec":{"replicas":${replicas}}}`]),
    async wait(check, timeoutMs, message) {
      await pollUntil(check, { timeoutMs, intervalMs: 250, message });
    },
    leader: async () =>
      (await jsonpath(["-n", NS, "get", "lease", "nginx-operator"], "{.spec.holderIdentity}")).split(
        "_",
      )[0] ?? "",
  };
}

/** An Nginx in namespace `site`, as YAML. */
export const nginx = (name: string, replicas: number, image: string) =>
  `apiVersion: proxy.example.com/v1
kind: Nginx
metadata: { name: ${name}, namespace: site }
spec: { replicas: ${replicas}, image: ${image} }
`;
