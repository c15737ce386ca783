import { parseArgs } from "node:util";
import {
  type BinaryName,
  buildComponent,
  COMPONENTS,
  defaultAssetsRoot,
  locateBinary,
  readBuildInfo,
} from "../testing/index.js";
import { CliError } from "./errors.js";

const USAGE = `Usage:
  kubeloop assets build [--component kubernetes|etcd|kwok]...
      Builds the pinned control-plane binaries from Go modules (needs Go ≥ 1.26), unless already cached.
  kubeloop assets where
      Prints where each binary comes from (KUBEBUILDER_ASSETS, or the cache).

The cache is $KUBELOOP_ASSETS, else ~/.cache/kubeloop.`;

export async function assetsCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: { component: { type: "string", multiple: true }, help: { type: "boolean", short: "h" } },
  });
  if (values.help || sub === undefined) {
    console.log(USAGE);
    return values.help ? 0 : 1;
  }
  if (sub === "build") {
    const names = (values.component ?? Object.keys(COMPONENTS)) as (keyof typeof COMPONENTS)[];
    for (const name of names) {
      if (!(name in COMPONENTS)) throw new CliError(`unknown component "${name}" (kubernetes, etcd or kwok)`);
    }
    const root = defaultAssetsRoot();
    for (const name of names) {
      const info = await buildComponent(name, { root });
      console.error(
        `${name} v${info.version}: ready (built ${info.builtAt} in ${info.seconds}s with Go ${info.go})`,
      );
    }
    return 0;
  }
  if (sub === "where") {
    const root = defaultAssetsRoot();
    console.log(`cache: ${root}`);
    for (const spec of Object.values(COMPONENTS)) {
      const info = readBuildInfo(root, spec);
      for (const binary of spec.binaries as readonly BinaryName[]) {
        const found = locateBinary(binary, { root });
        const where = found ? `${found.path} (${found.source})` : "missing — run `kubeloop assets build`";
        console.log(
          `${binary.padEnd(24)} ${where}${info && found?.source === "cache" ? ` v${info.version}` : ""}`,
        );
      }
    }
    return 0;
  }
  throw new CliError(`unknown assets command "${sub}"\n\n${USAGE}`);
}
