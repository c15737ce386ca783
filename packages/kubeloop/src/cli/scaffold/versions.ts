import { readFileSync } from "node:fs";

/**
 * The dependency versions a new project starts with. kubeloop's own and those of the packages a
 * project imports beside it (`typebox` for schemas) come from kubeloop's
 * package.json, so a project always uses the very versions its kubeloop was built and tested with
 * (two copies of typebox would make schemas from one unreadable to the other).
 */

interface PackageJson {
  version: string;
  dependencies: Record<string, string>;
}

const own = JSON.parse(
  readFileSync(new URL("../../../package.json", import.meta.url), "utf8"),
) as PackageJson;

/** The tools a project develops with: the versions kubeloop's own workspace uses. */
const TOOLS = { "@types/node": "^24.19.2", typescript: "^7.0.2", vitest: "^5.1.1" };

export const KUBELOOP_VERSION = own.version;

export function projectDependencies(kubeloopSpec: string): {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
} {
  const pinned = (name: string) => {
    const version = own.dependencies[name];
    if (!version) throw new Error(`kubeloop's package.json has no dependency "${name}"`);
    return version;
  };
  return {
    dependencies: { kubeloop: kubeloopSpec, typebox: pinned("typebox") },
    devDependencies: { ...TOOLS },
  };
}
