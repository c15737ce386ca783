import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildComponent, parseGoMod, readBuildInfo } from "./build.js";
import { compareVersions } from "./go.js";
import { defaultAssetsRoot, locateBinary } from "./locate.js";
import { acquireLock } from "./lock.js";
import { COMPONENTS } from "./versions.js";

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
