import { spawn } from "node:child_process";

/** What a kubectl run printed. */
export interface KubectlResult {
  /** The exit code; null when kubectl was killed (the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Which cluster {@link kubectl} talks to, and how it runs. */
export interface KubectlOptions {
  /** The kubeconfig to use (e.g. `plane.kubeconfigPath`). */
  kubeconfig: string;
  /** Written to kubectl's standard input (for `apply -f -`). */
  input?: string;
  /** The kubectl binary. Default: `$KUBECTL`, else `kubectl` on PATH. */
  binary?: string;
  /** kubectl is killed (SIGTERM) after this long; the result then has `code: null`. Default 60 s. */
  timeoutMs?: number;
}

/**
 * Runs the machine's kubectl against a control plane, the way a user would check what an operator
 * did. Resolves with the exit code and output; it does not throw on a non-zero exit.
 */
export function kubectl(args: string[], options: KubectlOptions): Promise<KubectlResult> {
  const binary = options.binary ?? process.env.KUBECTL ?? "kubectl";
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      env: { ...process.env, KUBECONFIG: options.kubeconfig },
      stdio: ["pipe", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 60_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", (error) =>
      reject(
        new Error(`kubectl could not be run (${binary}): ${error.message}. Install kubectl or set KUBECTL.`),
      ),
    );
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    // A kubectl that exits before reading its input (most commands never read it) closes the pipe:
    // the EPIPE that follows is no failure of ours, and its exit code says what happened.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
  });
}
