import { parseArgs } from "node:util";
import {
  type BinaryName,
  buildComponent,
  COMPONENTS,
  componentsFor,
  defaultAssetsRoot,
  KUBERNETES_VERSION_ENV,
  locateBinary,
  readBuildInfo,
  resolveKubernetesVersion,
  SUPPORTED_KUBERNETES_VERSIONS,
} from "../testing/index.js";
import { CliError } from "./errors.js";

const USAGE = `Usage:
  kubeloop assets build [--component NAME]... [--kubernetes-version 1.33]...
      Builds the pinned control-plane binaries, the node stack (kubelet, kube-proxy, containerd,
      runc, CNI plugins, CoreDNS, registry), helm, OLM's operator-verify and OLM v0 from Go modules
      (needs Go ≥ 1.26; runc needs gcc and libseccomp-dev), unless already cached.
      Components: ${Object.keys(COMPONENTS).join(", ")}.
      --kubernetes-version may repeat; each version is cached beside the others.
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
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || sub === undefined) {
    console.log(USAGE);
    return values.help ? 0 : 1;
  }
  if (sub === "build") {
    const names = (values.component ?? Object.keys(COMPONENTS)) as (keyof typeof COMPONENTS)[];
    for (const name of names) {
      if (!(name in COMPONENTS))
        throw new CliError(`unknown component "${name}" (${Object.keys(COMPONENTS).join(", ")})`);
    }
    const root = defaultAssetsRoot();
    for (const kubernetesVersion of kubernetesVersions(values["kubernetes-version"])) {
      for (const name of names) {
        const info = await buildComponent(name, { root, kubernetesVersion });
        console.error(
          `${name} v${info.version}: ready (built ${info.builtAt} in ${info.seconds}s with Go ${info.go})`,
        );
      }
    }
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
          `${binary.padEnd(24)} ${where}${info && found?.source === "cache" ? ` v${info.version}` : ""}`,
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
