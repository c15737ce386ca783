import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

const cli = join(import.meta.dirname, "../dist/cli/main.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * A fresh cluster folder for a test file that drives the built `kubeloop` CLI, and a function that
 * runs it; after the file's tests, `kubeloop cluster stop` and the folder is removed.
 */
export function clusterCli(
  prefix: string,
  base = tmpdir(),
): { dir: string; kubeloop: (...args: string[]) => CliResult } {
  const dir = join(mkdtempSync(join(base, prefix)), "cluster");
  const kubeloop = (...args: string[]): CliResult => {
    const result = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 180_000 });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  afterAll(() => {
    kubeloop("cluster", "stop", "--dir", dir);
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });
  return { dir, kubeloop };
}
