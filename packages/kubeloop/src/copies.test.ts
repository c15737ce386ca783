import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

// The copy-paste rule of `npm run lint` (`lint:copies`: jscpd on packages/kubeloop/src with the repository's
// .jscpd.json), on small trees of files made for each case.

const repository = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const jscpd = join(repository, "node_modules/.bin/jscpd");
const config = join(repository, ".jscpd.json");
const run = promisify(execFile);

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

/** Writes `files` under packages/kubeloop/src and runs the rule there: the exit code and the report. */
async function detect(files: Record<string, string>): Promise<{ code: number; output: string }> {
  root = await mkdtemp(join(tmpdir(), "kubeloop-copies-"));
  for (const [path, text] of Object.entries(files)) {
    const file = join(root, "packages/kubeloop/src", path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  try {
    const { stdout, stderr } = await run(jscpd, ["--config", config, "packages/kubeloop/src"], { cwd: root });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

/** Logic worth a helper: written twice, it is a copy. */
const backoff = (name: string) => `
export function ${name}(attempt: number, baseMs: number, capMs: number): number {
  if (!Number.isInteger(attempt) || attempt < 0) throw new RangeError(\`attempt must be a whole number, got \${attempt}\`);
  const exponential = baseMs * 2 ** Math.min(attempt, 30);
  const capped = Math.min(capMs, exponential);
  const jitter = capped * 0.1 * Math.random();
  return Math.round(capped - jitter);
}
`;

describe("the copy-paste rule", () => {
  it("fails the same logic in two source files, naming both", async () => {
    const { code, output } = await detect({
      "queue/delays.ts": backoff("queueDelay"),
      "cache/retry.ts": backoff("watchRetryDelay"),
    });
    expect(code).not.toBe(0);
    expect(output).toContain("queue/delays.ts");
    expect(output).toContain("cache/retry.ts");
  });

  it("passes logic written once, and copies in tests", async () => {
    const { code } = await detect({
      "queue/delays.ts": backoff("queueDelay"),
      "queue/delays.test.ts": backoff("queueDelay"),
      "cache/delays.test.ts": backoff("queueDelay"),
    });
    expect(code).toBe(0);
  });
});
