import { cpSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AssetsError } from "./errors.js";

/**
 * Karmada's recipe for the asset cache: its four control-plane mains from the release's own module
 * (it has no `replace` lines, so `go get` of the tag is the whole wrapper), named as upstream's
 * hack/build.sh names them, plus what the plane installs from the same module: the CRDs
 * (charts/karmada/_crds, as its kustomization lists them) and the webhook configuration.
 */

export const KARMADA_MODULE = "github.com/karmada-io/karmada";
/** `cmd/<dir>` → the binary upstream ships. */
const MAINS = {
  "controller-manager": "karmada-controller-manager",
  scheduler: "karmada-scheduler",
  webhook: "karmada-webhook",
  "aggregated-apiserver": "karmada-aggregated-apiserver",
} as const;

/** Every Karmada main prints `<name> version: version.Info{GitVersion:"v1.18.2", …}` from a subcommand. */
export const KARMADA_VERSION_ARGS = Object.fromEntries(
  Object.values(MAINS).map((binary) => [binary, { args: ["version"], printsVersion: true }]),
);

/** What the recipe needs from build.ts (passed in, so the two modules do not import each other). */
export interface KarmadaRecipeTools<Context extends { out: string; spec: { version: string } }> {
  download(context: Context, name: string, what: string, required: string): Promise<void>;
  compile(context: Context, packages: string[], flags: string[]): Promise<void>;
  moduleDir(context: Context): Promise<string>;
}

export async function buildKarmada<Context extends { out: string; spec: { version: string } }>(
  context: Context,
  tools: KarmadaRecipeTools<Context>,
): Promise<void> {
  const tag = `v${context.spec.version}`;
  try {
    await tools.download(context, "karmada", "Karmada", `${KARMADA_MODULE}@${tag}`);
    const stamp = (name: string, value: string) => `-X ${KARMADA_MODULE}/pkg/version.${name}=${value}`;
    const ldflags = ["-s", "-w", stamp("gitVersion", tag), stamp("gitTreeState", "clean")];
    const buildDate = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    ldflags.push(stamp("buildDate", buildDate));
    await tools.compile(
      context,
      Object.keys(MAINS).map((dir) => `${KARMADA_MODULE}/cmd/${dir}`),
      [`-ldflags=${ldflags.join(" ")}`],
    );
  } catch (error) {
    throw new AssetsError(karmadaBuildFailure(tag, error as Error));
  }
  for (const [dir, binary] of Object.entries(MAINS))
    renameSync(join(context.out, dir), join(context.out, binary));
  copyManifests(await tools.moduleDir(context), context.out);
}

/** The cause, and the two things a Karmada build needs that the others may not have shown yet. */
export function karmadaBuildFailure(tag: string, cause: Error): string {
  return (
    `Karmada ${tag} could not be built from its Go module ${KARMADA_MODULE}@${tag}.\n${cause.message}\n` +
    `It needs Go 1.25 or newer on PATH (the module's go.mod says go 1.25; GOTOOLCHAIN=local, so no other ` +
    `toolchain is downloaded) and the Go module proxy (go env GOPROXY) serving ${KARMADA_MODULE}@${tag} and its ` +
    `dependencies. Check both, then run \`npx kubeloop assets build --component karmada\` again; ` +
    `what was downloaded is kept.`
  );
}

/** The CRDs (without the conversion-webhook patches: every version is served as stored) and the webhook configuration. */
function copyManifests(moduleDir: string, out: string): void {
  const crds = join(moduleDir, "charts", "karmada", "_crds");
  const kustomization = join(crds, "kustomization.yaml");
  const webhooks = join(moduleDir, "artifacts", "deploy", "webhook-configuration.yaml");
  if (!existsSync(kustomization) || !existsSync(webhooks))
    throw new AssetsError(`Karmada's module has no ${kustomization} or ${webhooks}; its layout changed`);
  const listed = [...readFileSync(kustomization, "utf8").matchAll(/^- (bases\/\S+\.yaml)$/gm)].map(
    (match) => match[1] as string,
  );
  if (listed.length === 0) throw new AssetsError(`${kustomization} lists no CRDs; its layout changed`);
  for (const file of listed) cpSync(join(crds, file), join(out, "crds", file.split("/").pop() as string));
  writeFileSync(join(out, "webhook-configuration.yaml"), readFileSync(webhooks, "utf8"));
}
