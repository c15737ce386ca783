import { execFile } from "node:child_process";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { CliError } from "../errors.js";

/**
 * Where the image builder keeps what it downloads (Node runtimes, Debian packages) and the layers it
 * made from them: `$KUBELOOP_IMAGE_CACHE`, else `$XDG_CACHE_HOME/kubeloop/images`, else
 * `~/.cache/kubeloop/images` — beside the control-plane binaries, shared by every project.
 */
export function imageCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KUBELOOP_IMAGE_CACHE) return resolve(env.KUBELOOP_IMAGE_CACHE);
  const cache = env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), ".cache");
  return join(cache, "kubeloop", "images");
}

const run = promisify(execFile);

/** Runs a tool, turning its failure into a CliError that shows the command and its output. */
export async function tool(
  command: string,
  args: readonly string[],
  options: { cwd?: string; maxBuffer?: number; hint?: string } = {},
): Promise<{ stdout: Buffer; stderr: string }> {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd: options.cwd,
      encoding: "buffer",
      maxBuffer: options.maxBuffer ?? 64 * 1024 * 1024,
    });
    return { stdout, stderr: stderr.toString() };
  } catch (error) {
    const e = error as { code?: unknown; stderr?: Buffer; message: string };
    const why =
      e.code === "ENOENT" ? `${command} is not installed` : (e.stderr?.toString().trim() ?? e.message);
    throw new CliError(
      `${command} ${args.join(" ")} failed: ${why}${options.hint ? `\n${options.hint}` : ""}`,
    );
  }
}
