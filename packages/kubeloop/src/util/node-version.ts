/**
 * The oldest Node kubeloop runs on: 22.19 is where `zlib.createZstdDecompress` (which undici, the
 * HTTP client, loads at start) and type stripping of `.ts` files without a flag both arrived.
 */
export const MINIMUM_NODE = "22.19.0";

/** Why `version` (e.g. `20.20.2`) cannot run kubeloop, or undefined when it can. */
export function unsupportedNode(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  const [wantMajor = 0, wantMinor = 0] = MINIMUM_NODE.split(".").map(Number);
  if (major > wantMajor || (major === wantMajor && minor >= wantMinor)) return undefined;
  return (
    `kubeloop needs Node ${MINIMUM_NODE} or newer, and this is Node ${version}. ` +
    "Install Node 22 (22.19 or later) or 24; or pin one in the project (`npm install --save-dev node@24`), " +
    "whose binary `npx kubeloop` and npm scripts then run on."
  );
}

/**
 * Throws, saying which Node kubeloop needs, when this one is older: called as the client loads,
 * before undici, which on an older Node fails at load time with an error that names none of this.
 */
export function requireSupportedNode(version: string = process.versions.node): void {
  const problem = unsupportedNode(version);
  if (problem) throw new Error(problem);
}
