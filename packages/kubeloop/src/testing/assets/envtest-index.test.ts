import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { envtestSelfLink, parseEnvtestIndex, pickEnvtestRelease } from "./envtest-index.js";
import { packAssets } from "./pack.js";
import { readTarGz } from "./tar.js";
import { hostArch } from "./upstream.js";
import { componentsFor, KUBERNETES_VERSION } from "./versions.js";

// The committed copy of controller-tools' envtest-releases.yaml, parsed as setup-envtest reads it,
// and `kubeloop assets pack` checked against the tarball GNU tar makes of the same files.

const fixture = join(import.meta.dirname, "../../../test/fixtures/envtest-releases.yaml");
const index = parseEnvtestIndex(readFileSync(fixture, "utf8"), fixture);
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-envtest-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("upstream's envtest index", () => {
  it("picks the newest stable patch of a minor, and the newest stable release for no version", () => {
    const picked = pickEnvtestRelease(index, "1.36", "linux", "amd64");
    expect(picked.version).toBe("v1.36.2");
    expect(picked.name).toBe("envtest-v1.36.2-linux-amd64.tar.gz");
    expect(picked.hash).toMatch(/^[0-9a-f]{128}$/);
    expect(picked.selfLink).toBe(envtestSelfLink("1.36.2", picked.name));
    // 1.34 has alpha and beta releases too; only v1.34.0 and v1.34.1 are stable.
    expect(pickEnvtestRelease(index, "v1.34", "linux", "arm64").version).toBe("v1.34.1");
    expect(pickEnvtestRelease(index, undefined, "darwin", "arm64").version).toBe("v1.36.2");
    expect(pickEnvtestRelease(index, "1.31.0-beta.0", "linux", "amd64").version).toBe("v1.31.0-beta.0");
  });

  it("says which platforms exist when asked for one that does not, and which versions for a missing one", () => {
    expect(() => pickEnvtestRelease(index, "1.36", "linux", "riscv64")).toThrow(
      /envtest v1\.36\.2 is not published for linux\/riscv64; it is for .*linux-amd64.*linux-arm64/,
    );
    expect(() => pickEnvtestRelease(index, "1.99", "linux", "amd64")).toThrow(
      /no release for 1\.99; it lists v1\.23\.5, /,
    );
    expect(() => pickEnvtestRelease(index, "latest", "linux", "amd64")).toThrow(
      /"latest" is not a Kubernetes version/,
    );
    expect(() => parseEnvtestIndex("versions: []\n", "bad.yaml")).toThrow(
      /bad\.yaml is not an envtest index/,
    );
  });
});

// The cache `assets pack` reads: two components with small stand-ins for their binaries.
const root = join(tmp, "cache");
const specs = componentsFor(KUBERNETES_VERSION);
const builtAt = "2026-11-29T06:00:00.000Z";
const files = {
  "kube-apiserver": "apiserver-bytes\n".repeat(100),
  kubectl: "kubectl\n",
  etcd: "etcd-bytes\n".repeat(77),
};
for (const spec of [specs.kubernetes, specs.etcd]) {
  const dir = join(root, `${spec.name}-v${spec.version}`);
  mkdirSync(dir, { recursive: true });
  for (const binary of spec.binaries) writeFileSync(join(dir, binary), "x");
  writeFileSync(
    join(dir, "build-info.json"),
    JSON.stringify({ component: spec.name, version: spec.version, builtAt }),
  );
}
writeFileSync(
  join(root, `kubernetes-v${specs.kubernetes.version}`, "kube-apiserver"),
  files["kube-apiserver"],
);
writeFileSync(join(root, `kubernetes-v${specs.kubernetes.version}`, "kubectl"), files.kubectl);
writeFileSync(join(root, `etcd-v${specs.etcd.version}`, "etcd"), files.etcd);

describe("assets pack", () => {
  it("writes setup-envtest's tarball byte for byte as GNU tar does, with an index in upstream's shape", () => {
    const out = join(tmp, "pack");
    const result = packAssets({ root, out });
    const name = `envtest-v${KUBERNETES_VERSION}-linux-${hostArch()}.tar.gz`;
    expect(result.files).toEqual([name, `${name}.sha512`, "envtest-releases.yaml"]);
    const ours = readFileSync(join(out, name));

    // The same tree, archived by GNU tar as controller-tools' Dockerfile does (root-owned files).
    const tree = join(tmp, "tree", "controller-tools", "envtest");
    mkdirSync(tree, { recursive: true });
    const mtime = Date.parse(builtAt) / 1000;
    for (const [binary, text] of Object.entries(files)) {
      writeFileSync(join(tree, binary), text);
      chmodSync(join(tree, binary), 0o755);
      utimesSync(join(tree, binary), mtime, mtime);
    }
    chmodSync(tree, 0o755);
    utimesSync(tree, mtime, mtime);
    const gnu = spawnSync(
      "tar",
      [
        "--format=gnu",
        "--owner=root:0",
        "--group=root:0",
        "--no-recursion",
        "-cf",
        "-",
        "-C",
        join(tmp, "tree"),
        "controller-tools/envtest",
        ...Object.keys(files).map((binary) => `controller-tools/envtest/${binary}`),
      ],
      { maxBuffer: 1 << 24 },
    );
    expect(gnu.status, gnu.stderr?.toString()).toBe(0);
    expect(gunzipSync(ours).equals(gnu.stdout)).toBe(true);

    // What setup-envtest keeps (regular files, flattened to their base names), with their bytes.
    const entries = readTarGz(ours, name);
    expect(entries.map((e) => [e.name, e.type, e.mode.toString(8)])).toEqual([
      ["controller-tools/envtest/", "directory", "755"],
      ["controller-tools/envtest/kube-apiserver", "file", "755"],
      ["controller-tools/envtest/kubectl", "file", "755"],
      ["controller-tools/envtest/etcd", "file", "755"],
    ]);
    expect(entries[3]?.data.toString()).toBe(files.etcd);

    const packedIndex = parseEnvtestIndex(readFileSync(join(out, "envtest-releases.yaml"), "utf8"), "packed");
    const picked = pickEnvtestRelease(
      packedIndex,
      KUBERNETES_VERSION.split(".").slice(0, 2).join("."),
      "linux",
      hostArch(),
    );
    const sha512 = spawnSync("sha512sum", [join(out, name)], { encoding: "utf8" }).stdout.split(" ")[0];
    expect(picked.hash).toBe(sha512);
    expect(readFileSync(join(out, `${name}.sha512`), "utf8")).toBe(`${sha512}  /${name}\n`);
    // The same keys, in the same nesting, as upstream's file.
    const upstream = parse(readFileSync(fixture, "utf8")) as {
      releases: Record<string, Record<string, object>>;
    };
    const [first] = Object.values(upstream.releases);
    expect(Object.keys(Object.values(first ?? {})[0] ?? {})).toEqual(["hash", "selfLink"]);
  });
});
