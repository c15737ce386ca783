import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processesMentioning } from "../../test/processes.js";
import { ensureAssets } from "./assets/index.js";
import { ControlPlane } from "./control-plane.js";
import { AssetsError, ControlPlaneError } from "./errors.js";

const scratch: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeloop-errors-"));
  scratch.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts a plane that must fail, and returns the error and the folder it used. */
async function failingStart(options: ConstructorParameters<typeof ControlPlane>[0]) {
  const dir = join(tempDir(), "plane");
  const plane = new ControlPlane({ ...options, dir });
  const error = await plane.start().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, dir };
}

describe("ControlPlane errors", () => {
  it("says how to get binaries when they are missing and Go is not installed", async () => {
    const empty = tempDir();
    const error = await ensureAssets(["etcd", "kube-apiserver"], {
      root: empty,
      kubebuilderAssets: undefined,
      env: { PATH: "/nonexistent", HOME: empty },
      // The Go build only: the download path's errors are in assets/download.test.ts.
      source: "build",
      onProgress: () => {},
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AssetsError);
    const message = (error as Error).message;
    expect(message).toMatch(/The Go toolchain was not found/);
    expect(message).toMatch(/install Go 1\.26 or newer/);
    expect(message).toMatch(/KUBEBUILDER_ASSETS/);
    expect(readdirSync(empty).filter((entry) => !entry.startsWith("."))).toEqual([]);
  });

  it("fails fast with the build command when building is turned off", async () => {
    const empty = tempDir();
    await expect(
      ensureAssets(["kube-apiserver"], { root: empty, kubebuilderAssets: undefined, build: false }),
    ).rejects.toThrow(/Control-plane binaries missing for kubernetes .*Run `npx kubeloop assets build`/s);
  });

  it("names a binary that is not a program, and says how to replace it", async () => {
    const corrupt = join(tempDir(), "etcd");
    writeFileSync(corrupt, Buffer.from("this is not an executable\u0000\u0001\u0002"));
    chmodSync(corrupt, 0o755);
    const { error, dir } = await failingStart({ assets: { binaries: { etcd: corrupt } } });
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect((error as ControlPlaneError).component).toBe("etcd");
    expect((error as Error).message).toMatch(
      /^etcd exited with code \d+ while the control plane was starting/,
    );
    expect((error as Error).message).toContain(`${corrupt} is not a program`);
    expect((error as Error).message).toContain("kubeloop assets build");
    expect(processesMentioning(dir)).toEqual([]);
  });

  it("names a binary that crashes on start as possibly truncated", async () => {
    const { binaries } = await ensureAssets(["etcd"]);
    const truncated = join(tempDir(), "etcd");
    const { readFileSync } = await import("node:fs");
    writeFileSync(truncated, readFileSync(binaries.etcd as string).subarray(0, 2_000_000));
    chmodSync(truncated, 0o755);
    const { error } = await failingStart({ assets: { binaries: { etcd: truncated } } });
    expect((error as Error).message).toMatch(/etcd was killed by SIG(SEGV|BUS|ILL)/);
    expect((error as Error).message).toMatch(/crashed \(SIG\w+\); it may be truncated/);
  });

  it("reports etcd dying during start with etcd's last log lines, and leaves nothing behind", async () => {
    const { binaries } = await ensureAssets(["etcd"]);
    const wrapper = join(tempDir(), "etcd");
    // Real etcd that dies shortly after it comes up, as if OOM-killed while the API server starts.
    writeFileSync(
      wrapper,
      `#!/bin/sh\n"${binaries.etcd}" "$@" &\nchild=$!\nsleep 0.5\nkill -9 $child\necho "etcd: simulated crash" >&2\nexit 3\n`,
    );
    chmodSync(wrapper, 0o755);
    const { error, dir } = await failingStart({ assets: { binaries: { etcd: wrapper } } });
    expect(error).toBeInstanceOf(ControlPlaneError);
    expect((error as Error).message).toMatch(/^etcd exited with code 3 while the control plane was starting/);
    expect((error as Error).message).toContain("etcd: simulated crash");
    expect(existsSync(join(dir, "etcd"))).toBe(false);
    expect(processesMentioning(dir)).toEqual([]);
  });

  it("rejects a nonsensical node count before doing anything", () => {
    expect(() => new ControlPlane({ profile: "cluster", nodes: -1 })).toThrow(/nodes must be a whole number/);
  });
});
