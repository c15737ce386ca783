/** Prints a command's usage: asked for with --help (exit 0), or shown because no subcommand was given (exit 1). */
export function printUsage(usage: string, asked: boolean | undefined): number {
  console.log(usage);
  return asked ? 0 : 1;
}
