import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildComponent } from "./build.js";
import { AssetsError } from "./errors.js";
import { buildKarmada } from "./karmada-build.js";
import { componentOf, KARMADA_VERSION } from "./versions.js";

const scratch: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeloop-karmada-build-"));
  scratch.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("Karmada's component", () => {
  it("ships its four control-plane binaries at the pinned release", () => {
    expect(componentOf("karmada-webhook")).toEqual({
      name: "karmada",
      version: KARMADA_VERSION,
      binaries: [
        "karmada-controller-manager",
        "karmada-scheduler",
        "karmada-webhook",
        "karmada-aggregated-apiserver",
      ],
    });
  });

  it("names Go and the module proxy when the module cannot be fetched", async () => {
    const root = tempDir();
    // A Go that is new enough but whose proxy refuses the module, as a firewalled proxy answers.
    const go = join(root, "go");
    writeFileSync(
      go,
      `#!/bin/sh
if [ "$1" = env ]; then echo go1.26.8; exit 0; fi
echo "go: github.com/karmada-io/karmada@v${KARMADA_VERSION}: reading https://proxy.example/github.com/karmada-io/karmada/@v/v${KARMADA_VERSION}.info: 403 Forbidden" >&2
exit 1
`,
    );
    chmodSync(go, 0o755);
    const failure = buildComponent("karmada", { root, go, onProgress: () => {} });
    await expect(failure).rejects.toThrow(AssetsError);
    const message = await failure.catch((error: Error) => error.message);
    expect(message).toContain(`Karmada v${KARMADA_VERSION} could not be built from its Go module`);
    expect(message).toContain("403 Forbidden");
    expect(message).toContain("Go 1.25 or newer");
    expect(message).toContain("the Go module proxy (go env GOPROXY)");
    expect(message).toContain("npx kubeloop assets build --component karmada");
    expect(existsSync(join(root, `karmada-v${KARMADA_VERSION}`))).toBe(false);
  });

  it("names the binaries as upstream does and copies the CRDs its kustomization lists and the webhook configuration", async () => {
    const out = tempDir();
    const module = tempDir();
    mkdirSync(join(module, "charts/karmada/_crds/bases/policy"), { recursive: true });
    mkdirSync(join(module, "artifacts/deploy"), { recursive: true });
    writeFileSync(
      join(module, "charts/karmada/_crds/kustomization.yaml"),
      "resources:\n- bases/policy/policy.karmada.io_propagationpolicies.yaml\npatches:\n- path: patches/x.yaml\n",
    );
    writeFileSync(
      join(module, "charts/karmada/_crds/bases/policy/policy.karmada.io_propagationpolicies.yaml"),
      "kind: CRD\n",
    );
    writeFileSync(join(module, "charts/karmada/_crds/bases/policy/unlisted.yaml"), "kind: CRD\n");
    writeFileSync(
      join(module, "artifacts/deploy/webhook-configuration.yaml"),
      "kind: MutatingWebhookConfiguration\n",
    );
    const compiled: string[][] = [];
    await buildKarmada(
      { out, spec: { version: KARMADA_VERSION } },
      {
        download: async () => {},
        compile: async (_context, packages, flags) => {
          compiled.push([...packages, ...flags]);
          for (const pkg of packages) writeFileSync(join(out, pkg.split("/").pop() as string), "");
        },
        moduleDir: async () => module,
      },
    );
    expect(readdirSync(out).sort()).toEqual([
      "crds",
      "karmada-aggregated-apiserver",
      "karmada-controller-manager",
      "karmada-scheduler",
      "karmada-webhook",
      "webhook-configuration.yaml",
    ]);
    expect(readdirSync(join(out, "crds"))).toEqual(["policy.karmada.io_propagationpolicies.yaml"]);
    expect(compiled[0]?.join(" ")).toContain(`pkg/version.gitVersion=v${KARMADA_VERSION}`);
  });
});
