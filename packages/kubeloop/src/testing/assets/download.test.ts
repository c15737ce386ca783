import { spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AssetsMirror, startAssetsMirror } from "../../../test/assets-mirror.js";
import { CertificateAuthority } from "../pki.js";
import { startTunnelProxy } from "../servers/proxy.js";
import { readBuildInfo } from "./build.js";
import { ensureAssets } from "./index.js";
import { componentDir, defaultAssetsRoot } from "./locate.js";
import { obtainComponent, sourcePolicy } from "./obtain.js";
import { packAssets } from "./pack.js";
import { COMPONENTS, ETCD_VERSION } from "./versions.js";

// Prebuilt binaries from a mirror on loopback, laid out like upstream and filled by `assets pack
// --mirror` from this project's own etcd build: the happy path over HTTPS through a CONNECT proxy
// with the mirror's CA in NODE_EXTRA_CA_CERTS (in a child process, since Node reads that variable
// only at start-up), and each failure (corrupted byte, 404, 500, reset, stall, two processes at
// once, no Go and no mirror), each asserting its message and a cache left as it was.

const cli = join(import.meta.dirname, "../../../dist/cli/main.js");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-download-"));
const tree = join(tmp, "mirror");
const tarballPath = `/github.com/etcd-io/etcd/releases/download/v${ETCD_VERSION}/etcd-v${ETCD_VERSION}-linux-`;
const noGo = join(tmp, "no-such-go");
let mirror: AssetsMirror;
let sourceEtcd: Buffer;
let caches = 0;

/** A fresh, empty cache folder. */
function emptyCache(): string {
  caches++;
  return join(tmp, `cache-${caches}`);
}

/** Every file under `dir` (the cache must hold none after a failure). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** PATH without any folder that has a `go`: this machine as a Node-only CI image sees it. */
const pathWithoutGo = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((dir) => dir && !existsSync(join(dir, "go")))
  .join(delimiter);

interface Run {
  code: number | null;
  output: string;
}

/** `kubeloop assets build --component etcd` in a child process with `env` on top of this one's. */
function assetsBuild(env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, "assets", "build", "--component", "etcd"], {
      env: { ...process.env, PATH: `${join(process.execPath, "..")}${delimiter}${pathWithoutGo}`, ...env },
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("close", (code) => resolve({ code, output }));
  });
}

beforeAll(async () => {
  const root = defaultAssetsRoot();
  await ensureAssets(["etcd"], { root });
  sourceEtcd = readFileSync(join(componentDir(root, COMPONENTS.etcd), "etcd"));
  packAssets({ root, out: tree, mirror: true, envtest: false, components: ["etcd"] });
  mirror = await startAssetsMirror(tree);
}, 600_000);

afterAll(async () => {
  await mirror?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe("downloading from a mirror", () => {
  it("installs etcd over HTTPS through a proxy, trusting the mirror's CA from NODE_EXTRA_CA_CERTS", async () => {
    const ca = CertificateAuthority.create("mirror-ca");
    const serving = ca.issueServing({
      commonName: "mirror.internal",
      dnsNames: ["mirror.internal"],
      ipAddresses: [],
    });
    const https = await startAssetsMirror(tree, { tls: serving, host: "mirror.internal" });
    const proxy = await startTunnelProxy({ hosts: { "mirror.internal": "127.0.0.1" } });
    writeFileSync(join(tmp, "ca.pem"), ca.cert);
    try {
      const env = { KUBELOOP_ASSETS_MIRROR: https.url, HTTPS_PROXY: proxy.httpUrl, NO_PROXY: "" };
      const untrusted = await assetsBuild({ ...env, KUBELOOP_ASSETS: emptyCache() });
      expect(untrusted.code).toBe(1);
      expect(untrusted.output).toMatch(
        /Downloading https:\/\/mirror\.internal:\d+\/github\.com\/etcd-io\/etcd\/.*failed: .*certificate/i,
      );

      const cache = emptyCache();
      const run = await assetsBuild({
        ...env,
        KUBELOOP_ASSETS: cache,
        NODE_EXTRA_CA_CERTS: join(tmp, "ca.pem"),
      });
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain(`etcd v${ETCD_VERSION}: ready (downloaded`);
      const info = readBuildInfo(cache, COMPONENTS.etcd);
      expect(info?.source).toBe("download");
      expect(info?.from).toEqual([`${https.url}${tarballPath}${info?.from?.[0]?.split("-linux-")[1]}`]);
      expect(readFileSync(join(componentDir(cache, COMPONENTS.etcd), "etcd")).equals(sourceEtcd)).toBe(true);
      expect(proxy.tunnels.every((tunnel) => tunnel === `mirror.internal:${https.port}`)).toBe(true);
      expect(proxy.tunnels.length).toBeGreaterThan(0);
    } finally {
      await https.close();
      await proxy.close();
    }
  }, 120_000);
});

describe("downloading from a mirror: checks and retries", () => {
  it("refuses a file with one corrupted byte, naming the URL and both sums, and installs nothing", async () => {
    mirror.faults.set(".tar.gz", "corrupt");
    const cache = emptyCache();
    try {
      await expect(
        obtainComponent("etcd", { root: cache, mirror: mirror.url, go: noGo, onProgress: () => {} }),
      ).rejects.toThrow(
        new RegExp(
          `Checksum mismatch for ${mirror.url}${tarballPath}\\w+\\.tar\\.gz: SHA256SUMS says sha256 ([0-9a-f]{64}), the download is (?!\\1)[0-9a-f]{64}\\. Nothing was installed`,
        ),
      );
      expect(filesUnder(cache)).toEqual([]);
    } finally {
      mirror.faults.clear();
    }
  });

  for (const [fault, reason] of [
    ["404", /HTTP 404 Not Found/],
    ["500", /HTTP 500 Internal Server Error/],
    ["reset", /the connection was reset/],
    ["stall", /no data for 0\.3 s after \d+ bytes \(raise KUBELOOP_ASSETS_TIMEOUT/],
  ] as const) {
    it(`says which URL failed on a ${fault}, falls back to Go when it is there, and leaves the cache as it was`, async () => {
      mirror.faults.set(".tar.gz", fault);
      const cache = emptyCache();
      const options = { root: cache, mirror: mirror.url, stallMs: 300 };
      try {
        const noGoError = obtainComponent("etcd", { ...options, go: noGo, onProgress: () => {} });
        await expect(noGoError).rejects.toThrow(
          new RegExp(
            `Could not get etcd v${ETCD_VERSION}:\\n  - download: Downloading ${mirror.url}${tarballPath}\\w+\\.tar\\.gz failed: ${reason.source}`,
          ),
        );
        expect(filesUnder(cache)).toEqual([]);

        // With Go there, the build takes over (this `go` knows its version, then fails to build).
        const fakeGo = join(tmp, "fake-go");
        writeFileSync(
          fakeGo,
          '#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo go1.26.0 && exit 0\necho "no module proxy here" >&2\nexit 1\n',
        );
        chmodSync(fakeGo, 0o755);
        const lines: string[] = [];
        await expect(
          obtainComponent("etcd", { ...options, go: fakeGo, onProgress: (line) => lines.push(line) }),
        ).rejects.toThrow(/Creating the wrapper module failed: `go mod init …` exited with code 1/);
        expect(lines.join("\n")).toMatch(
          new RegExp(`${reason.source}[^]*\\nBuilding etcd v${ETCD_VERSION} with Go instead\\.`),
        );
        expect(existsSync(componentDir(cache, COMPONENTS.etcd))).toBe(false);
      } finally {
        mirror.faults.clear();
      }
    });
  }

  it("asks once more when the server closes the connection before answering", async () => {
    mirror.faults.set("SHA256SUMS", "drop-once");
    const cache = emptyCache();
    const sums = `/github.com/etcd-io/etcd/releases/download/v${ETCD_VERSION}/SHA256SUMS`;
    const before = mirror.hits.get(sums) ?? 0;
    const info = await obtainComponent("etcd", {
      root: cache,
      mirror: mirror.url,
      go: noGo,
      onProgress: () => {},
    });
    expect(info.source).toBe("download");
    expect((mirror.hits.get(sums) ?? 0) - before).toBe(2);
  });
});

describe("getting binaries without a mirror", () => {
  it("downloads once when two processes ask at the same time", async () => {
    const cache = emptyCache();
    const before = [...mirror.hits]
      .filter(([path]) => path.endsWith(".tar.gz"))
      .reduce((sum, [, n]) => sum + n, 0);
    const env = { KUBELOOP_ASSETS: cache, KUBELOOP_ASSETS_MIRROR: mirror.url };
    const [a, b] = await Promise.all([assetsBuild(env), assetsBuild(env)]);
    expect(a.code, a.output).toBe(0);
    expect(b.code, b.output).toBe(0);
    const after = [...mirror.hits]
      .filter(([path]) => path.endsWith(".tar.gz"))
      .reduce((sum, [, n]) => sum + n, 0);
    expect(after - before).toBe(1);
    expect(`${a.output}${b.output}`).toMatch(/Waiting for pid \d+ on .*, which is installing etcd/);
    expect(readBuildInfo(cache, COMPONENTS.etcd)?.source).toBe("download");
  }, 120_000);

  it("with no Go and no mirror, gives one error naming every way to get the binaries", async () => {
    const cache = emptyCache();
    // A proxy port nothing listens on: upstream is unreachable without a DNS query leaving loopback.
    const run = await assetsBuild({
      KUBELOOP_ASSETS: cache,
      HTTPS_PROXY: "http://127.0.0.1:9",
      NO_PROXY: "",
    });
    expect(run.code).toBe(1);
    expect(run.output).toContain(`Could not get etcd v${ETCD_VERSION}:`);
    expect(run.output).toContain(
      `Downloading https://github.com/etcd-io/etcd/releases/download/v${ETCD_VERSION}/SHA256SUMS failed`,
    );
    expect(run.output).toContain("Go build: The Go toolchain was not found");
    for (const way of [
      "KUBELOOP_ASSETS_MIRROR",
      "kubeloop assets pack --mirror",
      "HTTPS_PROXY",
      "install Go 1.26",
      "KUBEBUILDER_ASSETS",
    ]) {
      expect(run.output).toContain(way);
    }
    expect(filesUnder(cache)).toEqual([]);
  }, 60_000);

  it("KUBELOOP_ASSETS_SOURCE=cache-only gets nothing, and a typo in it is an error", async () => {
    const cache = emptyCache();
    await expect(
      obtainComponent("etcd", { root: cache, mirror: mirror.url, source: "cache-only" }),
    ).rejects.toThrow(
      /etcd v[\d.]+ is not in .*KUBELOOP_ASSETS_SOURCE=cache-only forbids downloading or building it/,
    );
    expect(() => sourcePolicy(undefined, { KUBELOOP_ASSETS_SOURCE: "dowload" })).toThrow(
      "KUBELOOP_ASSETS_SOURCE=dowload is not one of download, build, cache-only",
    );
    expect(filesUnder(cache)).toEqual([]);
  });
});
