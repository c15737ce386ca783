import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_CLUSTER_DIR, loadIntoCluster } from "../cluster.js";
import { CliError } from "../errors.js";
import { buildImage } from "./build.js";
import { buildBundleImage } from "./bundle-image.js";
import { layoutTar } from "./layout.js";
import type { Compression, Platform } from "./oci.js";
import { pushImage } from "./push.js";
import { spdxDocument } from "./sbom.js";

const USAGE = `Usage:
  kubeloop build [DIR] --tarball FILE | --push REF | --load [options]

  The project's operator image, without Docker: the operator bundled by esbuild, the pinned Node
  runtime, a base made from Debian's packages, non-root, no shell; an index for linux/amd64 and
  linux/arm64. Prints the image's digest; writes its SBOM (SPDX JSON) beside the tarball, or to
  --sbom FILE.

  DIR          the project (default: the current folder)
  --tarball    write an OCI image layout in a tar (ctr -n k8s.io images import FILE)
  --push       push to a registry: host[:port]/repository[:tag] (docker config credentials;
               plain http for 127.0.0.1, localhost and ::1)
  --plain-http push over plain HTTP to another address too (a test cluster's registry)
  --load       import it into every node of the local cluster (kubeloop cluster start --profile
               node), as kind load does; --cluster-dir DIR names its folder (default
               .kubeloop/cluster)
  --tag        the name the tarball gives the image (default: --push's REF, else "image" in
               package.json's "kubeloop" section, else NAME:VERSION)
  --compression gzip (default: read everywhere) or zstd (a third smaller; containerd >= 1.5,
               CRI-O, Docker >= 23)
  --platform   linux/amd64, linux/arm64 or both, comma-separated (default: both)
  --node       the Node version (default: the "node" package the project pins, else this Node's)
  --entry      the module to run (default: package.json's "main", else src/main.ts)
  --label      KEY=VALUE, more image labels (repeatable)
  --base       a base image in a registry (it must hold glibc and libstdc++, e.g. a distroless cc
               image) instead of the base made from Debian's packages
  --sbom       where to write the SBOM (default: FILE.spdx.json beside --tarball)
  --bundle     the OLM bundle image instead (bundle/ as kubeloop generate wrote it, labelled with
               its annotations; default name: the image's repository with -bundle, at VERSION)`;

/** `kubeloop build`. */
export async function buildCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tarball: { type: "string" },
      push: { type: "string" },
      tag: { type: "string" },
      platform: { type: "string" },
      compression: { type: "string" },
      node: { type: "string" },
      entry: { type: "string" },
      label: { type: "string", multiple: true },
      sbom: { type: "string" },
      bundle: { type: "boolean" },
      base: { type: "string" },
      load: { type: "boolean" },
      "cluster-dir": { type: "string" },
      "plain-http": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!values.tarball && !values.push && !values.load)
    throw new CliError(`say where the image goes: --tarball FILE, --push REF or --load\n\n${USAGE}`);
  if (positionals.length > 1) throw new CliError(`one project folder at most (got ${positionals.join(" ")})`);
  if (values.bundle) return bundleCommand(positionals[0] ?? ".", values);
  const started = Date.now();
  const image = await buildImage({
    dir: positionals[0] ?? ".",
    ...(values.tag || values.push ? { name: values.tag ?? values.push } : {}),
    ...(values.platform ? { platforms: parsePlatforms(values.platform) } : {}),
    ...(values.node ? { nodeVersion: values.node } : {}),
    ...(values.compression ? { compression: parseCompression(values.compression) } : {}),
    ...(values.entry ? { entry: values.entry } : {}),
    ...(values.base ? { base: values.base } : {}),
    ...(values.label ? { labels: parseLabels(values.label) } : {}),
  });
  const sbom = `${JSON.stringify(spdxDocument(image), null, 2)}\n`;
  if (values.tarball) {
    const file = resolve(values.tarball);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, layoutTar(image));
    console.error(`wrote ${file} (${image.name})`);
  }
  const sbomFile =
    values.sbom ?? (values.tarball ? `${values.tarball.replace(/\.tar$/, "")}.spdx.json` : undefined);
  if (sbomFile) {
    writeFileSync(sbomFile, sbom);
    // The licences of what the SBOM lists, beside it (the image holds them too, in /app).
    const licensesFile = `${sbomFile.replace(/(\.spdx)?\.json$/, "")}.licenses.txt`;
    writeFileSync(licensesFile, image.app.licenses);
    console.error(`wrote the SBOM to ${resolve(sbomFile)} and the licences to ${resolve(licensesFile)}`);
  }
  if (values.push) console.error(`pushed ${await pushImage(image, values.push, values["plain-http"])}`);
  if (values.load) {
    const dir = resolve(values["cluster-dir"] ?? DEFAULT_CLUSTER_DIR);
    const file = values.tarball
      ? resolve(values.tarball)
      : join(tmpdir(), `kubeloop-load-${process.pid}.tar`);
    if (!values.tarball) writeFileSync(file, layoutTar(image));
    try {
      for (const line of await loadIntoCluster(dir, [file])) console.error(line);
    } finally {
      if (!values.tarball) rmSync(file, { force: true });
    }
  }
  const sizes = image.platforms.map(
    (p) => `${p.platform.architecture} ${mb(p.layers.reduce((sum, l) => sum + l.blob.size, 0))} compressed`,
  );
  console.error(`built in ${((Date.now() - started) / 1000).toFixed(1)} s: ${sizes.join(", ")}`);
  for (const pkg of image.app.external)
    console.error(`  beside the bundle: ${pkg.name}@${pkg.version} (${pkg.reason})`);
  console.log(image.digest);
  return 0;
}

/** `kubeloop build --bundle`: the OLM bundle image instead of the operator's. */
async function bundleCommand(
  dir: string,
  values: { tarball?: string; push?: string; tag?: string; "plain-http"?: boolean },
): Promise<number> {
  const root = resolve(dir);
  const image = buildBundleImage(root, values.tag ?? values.push ?? defaultBundleName(root));
  if (values.tarball) {
    writeFileSync(resolve(values.tarball), layoutTar(image));
    console.error(`wrote ${resolve(values.tarball)} (${image.name})`);
  }
  if (values.push) console.error(`pushed ${await pushImage(image, values.push, values["plain-http"])}`);
  console.log(image.digest);
  return 0;
}

/** The operator's image repository with -bundle, tagged with the project's version (operator-sdk's convention). */
function defaultBundleName(root: string): string {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name?: string;
    version?: string;
    kubeloop?: { image?: string };
  };
  const repository = (pkg.kubeloop?.image ?? pkg.name ?? "operator").replace(/(:[^/:]+)?(@.*)?$/, "");
  return `${repository}-bundle:${pkg.version ?? "latest"}`;
}

function parsePlatforms(value: string): Platform["architecture"][] {
  return value.split(",").map((platform) => {
    const arch = platform.trim().replace(/^linux\//, "");
    if (arch !== "amd64" && arch !== "arm64")
      throw new CliError(`--platform ${platform}: kubeloop build makes linux/amd64 and linux/arm64`);
    return arch;
  });
}

function parseCompression(value: string): Compression {
  if (value !== "gzip" && value !== "zstd") throw new CliError(`--compression ${value}: gzip or zstd`);
  return value;
}

function parseLabels(labels: string[]): Record<string, string> {
  return Object.fromEntries(
    labels.map((label) => {
      const eq = label.indexOf("=");
      if (eq <= 0) throw new CliError(`--label ${label}: write KEY=VALUE`);
      return [label.slice(0, eq), label.slice(eq + 1)];
    }),
  );
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
