import { delimiter, dirname } from "node:path";

/**
 * The environment of a developer's shell, for commands a test runs as a user would (npm, a
 * project's own vitest): Node 24 first on the PATH, and none of this test runner's variables
 * (VITEST_*, its KUBECONFIG, FORCE_COLOR), which would leak into the project's own test run.
 */
export function developerShell(extra: Record<string, string> = {}): Record<string, string> {
  const PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;
  return Object.fromEntries(
    Object.entries({ ...process.env, PATH, NO_COLOR: "1", ...extra }).filter(
      ([key]) => !/^(VITEST|KUBECONFIG$|FORCE_COLOR$)/.test(key),
    ),
  ) as Record<string, string>;
}
