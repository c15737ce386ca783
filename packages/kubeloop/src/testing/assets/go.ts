import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { AssetsError, quoteLog } from "./errors.js";
import { MINIMUM_GO } from "./versions.js";

/**
 * Runs the Go toolchain for the asset builds: one place that knows the environment a reproducible,
 * offline-friendly build needs, and that turns a failure into a message with the log's tail.
 */

/** The environment every build runs with, and why. */
export function goEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    // Never download another toolchain: a module asking for a newer Go must fail loudly instead.
    GOTOOLCHAIN: "local",
    // Static binaries, as upstream ships them (no libc dependency, nothing to install).
    CGO_ENABLED: "0",
    // Our wrapper modules are written on the fly; let `go` complete go.mod/go.sum as it resolves.
    GOFLAGS: "-mod=mod",
  };
}

/** Checks that `go` is on PATH and new enough; returns its version (e.g. `1.26.8`). */
export function checkGo(goBinary = "go", env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(goBinary, ["env", "GOVERSION"], { env, encoding: "utf8" });
  if (result.error || result.status !== 0) {
    throw new AssetsError(
      `The Go toolchain was not found (tried \`${goBinary}\` on PATH), and kubeloop builds the control-plane ` +
        `binaries from Go modules.\n` +
        `Do one of these:\n` +
        `  - install Go ${MINIMUM_GO} or newer and run again (the first build takes about 20 minutes on 2 cores);\n` +
        `  - set KUBEBUILDER_ASSETS to a folder with envtest binaries (etcd, kube-apiserver), as setup-envtest makes;\n` +
        `  - set KUBELOOP_ASSETS to a folder filled by \`kubeloop assets build\` on another machine of the same kind.`,
    );
  }
  const version = result.stdout.trim().replace(/^go/, "");
  if (compareVersions(version, MINIMUM_GO) < 0) {
    throw new AssetsError(
      `Go ${version} is too old to build the control plane: Kubernetes 1.36 and kwok 0.8 need Go ${MINIMUM_GO} or newer. ` +
        `Install a newer Go, or set KUBEBUILDER_ASSETS to prebuilt envtest binaries.`,
    );
  }
  return version;
}

/** Compares dotted numeric versions (`1.26.8` vs `1.26`); missing parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0);
  const pb = b.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

export interface GoRun {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Every line of output is appended here, so a failure can be read in full afterwards. */
  log: WriteStream;
  logPath: string;
  /** Called with each line of output (for progress). */
  onLine?: (line: string) => void;
}

const TAIL_LINES = 40;

/** Runs `go <args>`; resolves with its stdout, or rejects with an {@link AssetsError} naming `what`. */
export function runGo(what: string, args: string[], run: GoRun, goBinary = "go"): Promise<string> {
  return new Promise((resolveRun, rejectRun) => {
    run.log.write(`\n$ go ${args.join(" ")}\n`);
    const child = spawn(goBinary, args, { cwd: run.cwd, env: run.env, stdio: ["ignore", "pipe", "pipe"] });
    const tail: string[] = [];
    let stdout = "";
    const onData = (isStdout: boolean) => {
      let partial = "";
      return (chunk: Buffer) => {
        const text = chunk.toString("utf8");
        run.log.write(text);
        if (isStdout) stdout += text;
        const lines = (partial + text).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) {
          tail.push(line);
          if (tail.length > TAIL_LINES) tail.shift();
          run.onLine?.(line);
        }
      };
    };
    child.stdout.on("data", onData(true));
    child.stderr.on("data", onData(false));
    child.on("error", (error) => rejectRun(new AssetsError(`${what}: could not run go: ${error.message}`)));
    child.on("close", (code, signal) => {
      if (code === 0) return resolveRun(stdout);
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      rejectRun(
        new AssetsError(
          `${what} failed: \`go ${args.slice(0, 2).join(" ")} …\` ${how}.\n` +
            `Last lines of the build log (${run.logPath}):\n${quoteLog(tail.join("\n"))}\n` +
            `If this is a network error, check that the Go module proxy is reachable (go env GOPROXY) and run again; ` +
            `the build resumes from what it already downloaded.`,
        ),
      );
    });
  });
}

export function openLog(path: string): WriteStream {
  return createWriteStream(path, { flags: "a" });
}
