import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildComponent, readBuildInfo } from "./build.js";
import { compareVersions } from "./go.js";
import { defaultAssetsRoot, locateBinary } from "./locate.js";
import { acquireLock } from "./lock.js";
import { parseGoMod } from "./recipes.js";
import {
  COMPONENTS,
  componentOf,
  HELM_VERSION,
  KUBERNETES_VERSION,
  OLDEST_KUBERNETES_VERSION,
  OLM_API_VERSION,
  OLM_VERSION,
  resolveKubernetesVersion,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "./versions.js";

const scratch: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeloop-assets-"));
  scratch.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeExecutable(path: string): string {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, 0o755);
  return path;
}

describe("parseGoMod", () => {
  it("reads the go directive, the godebug default and the staging modules", () => {
    const parsed = parseGoMod(`module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tk8s.io/api v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/apiserver => ./staging/src/k8s.io/apiserver
\tgithub.com/other/thing => github.com/other/thing v1.0.0
)
`);
    expect(parsed).toEqual({
      go: "1.26.0",
      godebugDefault: "go1.26",
      stagingModules: ["k8s.io/api", "k8s.io/apiserver"],
    });
  });

  it("fails loudly when the layout it relies on is gone", () => {
    expect(() => parseGoMod("module x\n\ngo 1.26\n")).toThrow(/lists no staging modules/);
  });
});

describe("compareVersions", () => {
  it("orders dotted versions numerically", () => {
    expect(compareVersions("1.26.8", "1.26")).toBe(1);
    expect(compareVersions("1.26", "1.26.0")).toBe(0);
    expect(compareVersions("1.9", "1.26")).toBe(-1);
  });
});

describe("resolveKubernetesVersion", () => {
  it("takes the option, else KUBELOOP_K8S_VERSION, else the newest; a minor means its pinned patch", () => {
    expect(resolveKubernetesVersion(undefined, {})).toBe(KUBERNETES_VERSION);
    expect(resolveKubernetesVersion(undefined, { KUBELOOP_K8S_VERSION: "" })).toBe(KUBERNETES_VERSION);
    expect(resolveKubernetesVersion(undefined, { KUBELOOP_K8S_VERSION: "1.33" })).toBe(
      OLDEST_KUBERNETES_VERSION,
    );
    expect(resolveKubernetesVersion("v1.36", { KUBELOOP_K8S_VERSION: "1.33" })).toBe(KUBERNETES_VERSION);
    expect(resolveKubernetesVersion("1.33.7", {})).toBe("1.33.7");
  });

  it("supports three minors back from the newest, oldest first", () => {
    const minors = SUPPORTED_KUBERNETES_VERSIONS.map((v) => Number(v.split(".")[1]));
    expect(SUPPORTED_KUBERNETES_VERSIONS[0]).toBe(OLDEST_KUBERNETES_VERSION);
    expect(SUPPORTED_KUBERNETES_VERSIONS.at(-1)).toBe(KUBERNETES_VERSION);
    expect(minors).toEqual([...minors].sort((a, b) => a - b));
    expect((minors.at(-1) ?? 0) - (minors[0] ?? 0)).toBeGreaterThanOrEqual(3);
  });

  it("names the supported minors when the version is unsupported or malformed", () => {
    expect(() => resolveKubernetesVersion("1.29", {})).toThrow(
      /Kubernetes 1\.29 \(from "1\.29"\) is not supported: kubeloop supports 1\.33, 1\.34, 1\.35, 1\.36/,
    );
    expect(() => resolveKubernetesVersion(undefined, { KUBELOOP_K8S_VERSION: "latest" })).toThrow(
      /KUBELOOP_K8S_VERSION=latest is not a Kubernetes version: write a minor such as 1\.33/,
    );
  });
});

describe("the shipping tools", () => {
  it("are components of their own, the same build for every supported Kubernetes version", () => {
    for (const version of SUPPORTED_KUBERNETES_VERSIONS) {
      expect(componentOf("helm", version)).toEqual({
        name: "helm",
        version: HELM_VERSION,
        binaries: ["helm"],
      });
      expect(componentOf("operator-verify", version)).toEqual({
        name: "olm",
        version: OLM_API_VERSION,
        binaries: ["operator-verify"],
      });
      expect(componentOf("catalog", version)).toEqual({
        name: "olm-lifecycle",
        version: OLM_VERSION,
        binaries: ["olm", "catalog", "copy-content", "cpb", "opm", "grpc_health_probe"],
      });
    }
    // `kubeloop assets build` (npm test's assets step) builds every component, these included.
    expect(Object.keys(COMPONENTS)).toEqual([
      "kubernetes",
      "etcd",
      "kwok",
      "helm",
      "olm",
      "olm-lifecycle",
      "kubernetes-node",
      "containerd",
      "runc",
      "cni-plugins",
      "coredns",
      "registry",
      "karmada",
    ]);
  });

  it("puts the node stack's kubelet and kube-proxy in the control plane's version, and the rest on pins of their own", () => {
    expect(componentOf("kubelet", "1.33.13")).toEqual({
      name: "kubernetes-node",
      version: "1.33.13",
      binaries: ["kubelet", "kube-proxy", "pause"],
    });
    expect(componentOf("containerd-shim-runc-v2").name).toBe("containerd");
    expect(componentOf("ptp").binaries).toEqual(["ptp", "host-local", "loopback", "portmap"]);
    expect(componentOf("runc", "1.33.13")).toEqual(componentOf("runc"));
  });

  it("is found in the cache under its own version", () => {
    const root = tempDir();
    const helm = fakeExecutable(join(root, `helm-v${HELM_VERSION}`, "helm"));
    expect(locateBinary("helm", { root, kubebuilderAssets: undefined })).toEqual({
      path: helm,
      source: "cache",
    });
  });
});

describe("locating binaries", () => {
  it("prefers an explicit path, then KUBEBUILDER_ASSETS, then the cache", () => {
    const root = tempDir();
    const envtest = tempDir();
    const cached = fakeExecutable(join(root, "etcd-v3.6.16", "etcd"));
    expect(locateBinary("etcd", { root, kubebuilderAssets: undefined })).toEqual({
      path: cached,
      source: "cache",
    });
    const fromEnvtest = fakeExecutable(join(envtest, "etcd"));
    expect(locateBinary("etcd", { root, kubebuilderAssets: envtest })).toEqual({
      path: fromEnvtest,
      source: "KUBEBUILDER_ASSETS",
    });
    expect(
      locateBinary("etcd", { root, kubebuilderAssets: envtest, binaries: { etcd: "/opt/etcd" } }),
    ).toEqual({
      path: "/opt/etcd",
      source: "option",
    });
    // envtest folders have no kube-scheduler: that one still comes from the cache, or nowhere.
    expect(locateBinary("kube-scheduler", { root, kubebuilderAssets: envtest })).toBeUndefined();
  });

  it("keeps each Kubernetes version's build in its own folder", () => {
    const root = tempDir();
    const oldest = fakeExecutable(join(root, `kubernetes-v${OLDEST_KUBERNETES_VERSION}`, "kube-apiserver"));
    const none = { root, kubebuilderAssets: undefined };
    expect(locateBinary("kube-apiserver", { ...none, kubernetesVersion: "1.33" })?.path).toBe(oldest);
    expect(
      locateBinary("kube-apiserver", { ...none, kubernetesVersion: KUBERNETES_VERSION }),
    ).toBeUndefined();
    // etcd is shared by every version.
    const etcd = fakeExecutable(join(root, `etcd-v${COMPONENTS.etcd.version}`, "etcd"));
    expect(locateBinary("etcd", { ...none, kubernetesVersion: "1.33" })?.path).toBe(etcd);
  });

  it("keeps the cache outside projects: KUBELOOP_ASSETS, else XDG_CACHE_HOME, else ~/.cache", () => {
    expect(defaultAssetsRoot({ KUBELOOP_ASSETS: "/srv/assets" })).toBe("/srv/assets");
    expect(defaultAssetsRoot({ XDG_CACHE_HOME: "/var/cache/me" })).toBe("/var/cache/me/kubeloop");
    expect(defaultAssetsRoot({})).toBe(join(homedir(), ".cache", "kubeloop"));
  });
});

describe("the build lock", () => {
  it("lets one holder in at a time and hands over on release", async () => {
    const path = join(tempDir(), "lock");
    const first = await acquireLock(path, () => {});
    const waits: string[] = [];
    let secondHeld = false;
    const second = acquireLock(path, (holder) => waits.push(holder)).then((lock) => {
      secondHeld = true;
      return lock;
    });
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(secondHeld).toBe(false);
    expect(waits).toEqual([expect.stringMatching(new RegExp(`^pid ${process.pid} on `))]);
    first.release();
    (await second).release();
    expect(secondHeld).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  it("takes over a lock whose holder died", async () => {
    const path = join(tempDir(), "lock");
    mkdirSync(path);
    const { hostname } = await import("node:os");
    writeFileSync(join(path, "owner"), `999999999@${hostname()}\n`);
    const lock = await acquireLock(path, () => {
      throw new Error("should not wait for a dead holder");
    });
    expect(readFileSync(join(path, "owner"), "utf8")).toContain(`${process.pid}@`);
    lock.release();
  });
});

describe("buildComponent (real Go toolchain)", () => {
  it("builds once when two callers ask at the same time, and records the build", async () => {
    const root = tempDir();
    const progress: string[][] = [[], []];
    const [a, b] = await Promise.all(
      [0, 1].map((i) => buildComponent("etcd", { root, onProgress: (line) => progress[i]?.push(line) })),
    );
    expect(a).toEqual(b);
    expect(a?.version).toBe(COMPONENTS.etcd.version);
    expect(a?.versions.etcd).toContain(`etcd Version: ${COMPONENTS.etcd.version}`);
    const builds = progress.flat().filter((line) => line.startsWith("Building etcd"));
    expect(builds).toHaveLength(1);
    expect(progress.flat().some((line) => line.startsWith("Waiting for pid"))).toBe(true);
    expect(readBuildInfo(root, COMPONENTS.etcd)).toEqual(a);
    // A third call finds the build and does nothing.
    const quiet: string[] = [];
    await buildComponent("etcd", { root, onProgress: (line) => quiet.push(line) });
    expect(quiet).toEqual([]);
  });
});
