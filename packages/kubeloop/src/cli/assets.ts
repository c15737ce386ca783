import { parseArgs } from "node:util";
import {
  type BinaryName,
  COMPONENTS,
  type ComponentName,
  componentsFor,
  defaultAssetsRoot,
  KUBERNETES_VERSION_ENV,
  locateBinary,
  obtainComponent,
  packAssets,
  readBuildInfo,
  resolveKubernetesVersion,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "../testing/assets/index.js";
import { CliError } from "./errors.js";
import { printUsage } from "./usage.js";

const USAGE = `Usage:
  kubeloop assets build [--component NAME]... [--kubernetes-version 1.33]...
      Gets the pinned control-plane binaries, the node stack (kubelet, kube-proxy, containerd,
      runc, CNI plugins, CoreDNS, registry), kwok, helm, OLM's operator-verify and OLM v0, unless
      cached: upstream's release binaries, downloaded and checked against upstream's checksums (or
      the same files from $KUBELOOP_ASSETS_MIRROR), else built from Go modules (Go ≥ 1.26; runc
      needs gcc and libseccomp-dev). OLM, published upstream only as images, is always built.
      $KUBELOOP_ASSETS_SOURCE=download|build|cache-only forces one way.
      Components: ${Object.keys(COMPONENTS).join(", ")}.
      --kubernetes-version may repeat; each version is cached beside the others.
  kubeloop assets pack --out DIR [--mirror] [--base-url URL] [--kubernetes-version 1.33]
      Writes the cached kube-apiserver and etcd as setup-envtest's tarball with an index in
      controller-tools' envtest-releases.yaml shape (\`setup-envtest sideload\` takes the tarball).
      --mirror writes every downloadable component as upstream publishes it, with its checksum
      file, at upstream's paths: serve DIR and point KUBELOOP_ASSETS_MIRROR at it.
      --base-url is the URL DIR will be served at (the index's links point there).
  kubeloop assets where [--kubernetes-version 1.33]
      Prints where each binary comes from (KUBEBUILDER_ASSETS, or the cache).

Supported Kubernetes versions: ${SUPPORTED_KUBERNETES_VERSIONS.join(", ")} (a minor such as 1.33 means
its pinned patch). Default: $${KUBERNETES_VERSION_ENV}, else the newest.
The cache is $KUBELOOP_ASSETS, else ~/.cache/kubeloop.`;

export async function assetsCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      component: { type: "string", multiple: true },
      "kubernetes-version": { type: "string", multiple: true },
      out: { type: "string" },
      mirror: { type: "boolean" },
      "base-url": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || sub === undefined) return printUsage(USAGE, values.help);
  if (sub === "build") {
    const names = (values.component ?? Object.keys(COMPONENTS)) as (keyof typeof COMPONENTS)[];
    for (const name of names) {
      if (!(name in COMPONENTS))
        throw new CliError(`unknown component "${name}" (${Object.keys(COMPONENTS).join(", ")})`);
    }
    const root = defaultAssetsRoot();
    for (const kubernetesVersion of kubernetesVersions(values["kubernetes-version"])) {
      for (const name of names) {
        const info = await obtainComponent(name as ComponentName, { root, kubernetesVersion });
        const how = info.source === "download" ? "downloaded" : `built with Go ${info.go}`;
        console.error(`${name} v${info.version}: ready (${how} ${info.builtAt} in ${info.seconds}s)`);
      }
    }
    return 0;
  }
  if (sub === "pack") {
    if (!values.out) throw new CliError(`assets pack needs --out DIR\n\n${USAGE}`);
    const kubernetesVersion = kubernetesVersions(values["kubernetes-version"])[0];
    const result = packAssets({
      root: defaultAssetsRoot(),
      out: values.out,
      kubernetesVersion,
      mirror: values.mirror === true,
      baseUrl: values["base-url"],
    });
    for (const file of result.files) console.log(file);
    if (result.missing.length > 0) {
      console.error(
        `Not in the cache, so not packed: ${result.missing.join(", ")} (run \`kubeloop assets build\`).`,
      );
    }
    console.error(`Wrote ${result.files.length} files to ${values.out}; index: ${result.index}`);
    return 0;
  }
  if (sub === "where") {
    const root = defaultAssetsRoot();
    const kubernetesVersion =
      kubernetesVersions(values["kubernetes-version"])[0] ?? resolveKubernetesVersion();
    console.log(`cache: ${root}\nkubernetes: v${kubernetesVersion}`);
    for (const spec of Object.values(componentsFor(kubernetesVersion))) {
      const info = readBuildInfo(root, spec);
      for (const binary of spec.binaries as readonly BinaryName[]) {
        const found = locateBinary(binary, { root, kubernetesVersion });
        const where = found
          ? `${found.path} (${found.source})`
          : `missing — run \`kubeloop assets build --kubernetes-version ${kubernetesVersion}\``;
        console.log(
          `${binary.padEnd(24)} ${where}${info && found?.source === "cache" ? ` v${info.version}${info.source === "download" ? " (downloaded)" : ""}` : ""}`,
        );
      }
    }
    return 0;
  }
  throw new CliError(`unknown assets command "${sub}"\n\n${USAGE}`);
}

/** The exact versions asked for (each checked, so a typo fails before any build), else the default. */
function kubernetesVersions(requested: string[] | undefined): string[] {
  try {
    return requested?.length
      ? requested.map((v) => resolveKubernetesVersion(v))
      : [resolveKubernetesVersion()];
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}
