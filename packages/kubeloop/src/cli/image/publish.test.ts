import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, pollUntil } from "../../testing/index.js";
import { type BuiltImage, buildImage } from "./build.js";
import { layoutTar } from "./layout.js";
import { MEDIA_TYPES } from "./oci.js";
import { pushImage } from "./push.js";

// Where the image goes: a distribution registry on loopback (push), and containerd (`ctr images
// import` of the tarball, then a container run by runc). Both run only where their binaries are.

/**
 * The one place that says where the tests find the registry, containerd, ctr and runc: an
 * environment variable, else the asset cache (`kubeloop assets build` puts them there), else the
 * prototype folder the node stack was first built in.
 */
function binary(name: "registry" | "containerd" | "ctr" | "runc"): string | undefined {
  const fromEnv = process.env[`KUBELOOP_${name.toUpperCase()}_BIN`];
  if (fromEnv) return fromEnv;
  const assets =
    process.env.KUBELOOP_ASSETS ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "kubeloop");
  const component = name === "ctr" ? "containerd" : name;
  const cached = existsSync(assets)
    ? readdirSync(assets)
        .filter((dir) => dir.startsWith(`${component}-v`))
        .map((dir) => join(assets, dir, name))
        .find((path) => existsSync(path))
    : undefined;
  return cached ?? [join("/tmp/proto/bin", name)].find((path) => existsSync(path));
}

const REPO = join(import.meta.dirname, "../../../../..");
const NODE_VERSION = (
  JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { devDependencies: { node: string } }
).devDependencies.node;
const scratch = mkdtempSync(join(tmpdir(), "kubeloop-publish-"));
const children: ChildProcess[] = [];
let image: BuiltImage;
/** The reference the push test pushed to, for the --base test. */
let pushed: string | undefined;

beforeAll(async () => {
  image = await buildImage({
    dir: join(REPO, "examples/nginx"),
    name: "kubeloop.test/nginx-operator:publish",
  });
}, 900_000);
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
});

function start(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d));
  child.stderr?.on("data", (d: Buffer) => (output += d));
  child.on("exit", (code) => code && code !== 0 && console.error(`${command} exited ${code}:\n${output}`));
  children.push(child);
  return child;
}

const registryBin = binary("registry");
describe.runIf(registryBin)("kubeloop build --push, to a distribution registry on loopback", () => {
  it("pushes every blob, each platform's manifest and the index under the tag, and pushes again as a no-op", async () => {
    const port = await freePort();
    const config = join(scratch, "registry.yml");
    writeFileSync(
      config,
      `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${join(scratch, "registry")}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
    );
    start(registryBin ?? "", ["serve", config]);
    const base = `http://127.0.0.1:${port}/v2`;
    await pollUntil(async () => (await fetch(`${base}/`).catch(() => undefined))?.status === 200, {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const reference = `127.0.0.1:${port}/nginx-operator:0.1.0`;
    expect(await pushImage(image, reference)).toBe(`127.0.0.1:${port}/nginx-operator@${image.digest}`);
    expect(await pushImage(image, reference)).toContain(image.digest);
    const index = await fetch(`${base}/nginx-operator/manifests/0.1.0`, {
      headers: { accept: MEDIA_TYPES.index },
    });
    expect(index.status).toBe(200);
    expect(index.headers.get("docker-content-digest")).toBe(image.digest);
    expect(Buffer.from(await index.arrayBuffer()).equals(image.index.bytes)).toBe(true);
    for (const blob of image.blobs) {
      const kind = blob.mediaType.includes("manifest") ? "manifests" : "blobs";
      const head = await fetch(`${base}/nginx-operator/${kind}/${blob.digest}`, {
        method: "HEAD",
        headers: { accept: blob.mediaType },
      });
      expect({ digest: blob.digest, status: head.status }).toEqual({ digest: blob.digest, status: 200 });
    }
    pushed = reference;
  });

  it("builds on a base pulled from it (--base): the base's layers for the platform, then the runtime and the operator", async () => {
    expect(pushed).toBeDefined();
    const onBase = await buildImage({
      dir: join(REPO, "examples/nginx"),
      base: pushed ?? "",
      platforms: ["arm64"],
    });
    const base = image.platforms.find((p) => p.platform.architecture === "arm64")?.layers ?? [];
    const [built] = onBase.platforms;
    const digests = (layers: readonly { blob: { digest: string } }[]) => layers.map((l) => l.blob.digest);
    // The pushed image is all base here: its four layers, then node and the bundle again.
    expect(digests(built?.layers ?? [])).toEqual([
      ...digests(base),
      base[2]?.blob.digest,
      base[3]?.blob.digest,
    ]);
    const config = JSON.parse(built?.config.bytes.toString() ?? "{}") as {
      config: { Labels: Record<string, string> };
    };
    expect(config.config.Labels["org.opencontainers.image.base.name"]).toBe(pushed);
    expect(config.config.Labels["org.opencontainers.image.base.digest"]).toBe(image.digest);
    expect(onBase.debian).toEqual([]);
  });
});

const containerdBin = binary("containerd");
const ctrBin = binary("ctr");
const runcBin = binary("runc");
describe.runIf(containerdBin && ctrBin && runcBin && process.getuid?.() === 0)(
  "kubeloop build --tarball, imported by containerd",
  () => {
    it("is imported by ctr under its name with both platforms, and runs as nonroot under runc", async () => {
      const dir = join(scratch, "containerd");
      const socket = join(dir, "containerd.sock");
      const config = join(scratch, "containerd.toml");
      writeFileSync(
        config,
        [
          "version = 3",
          `root = "${join(dir, "root")}"`,
          `state = "${join(dir, "state")}"`,
          'disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.nri.v1.nri"]',
          "[grpc]",
          `  address = "${socket}"`,
        ].join("\n"),
      );
      // The shim and runc are found on containerd's PATH.
      const path = [join(containerdBin ?? "", ".."), join(runcBin ?? "", ".."), process.env.PATH].join(":");
      start(containerdBin ?? "", ["--config", config], { ...process.env, PATH: path });
      const ctr = (...args: string[]) =>
        spawnSync(ctrBin ?? "", ["-a", socket, "-n", "k8s.io", ...args], {
          encoding: "utf8",
          env: { ...process.env, PATH: path },
          timeout: 60_000,
        });
      await pollUntil(async () => ctr("version").status === 0, { timeoutMs: 20_000, intervalMs: 100 });
      const tarball = join(scratch, "image.tar");
      writeFileSync(tarball, layoutTar(image));
      const imported = ctr("images", "import", tarball);
      expect(imported.status, imported.stderr).toBe(0);
      const listed = ctr("images", "ls");
      const line = listed.stdout.split("\n").find((l) => l.startsWith(`${image.name} `)) ?? listed.stdout;
      expect(line).toContain(image.digest);
      expect(line).toContain("linux/amd64,linux/arm64");
      const node = ctr(
        "run",
        "--rm",
        image.name,
        "node-version",
        "/usr/local/bin/node",
        "-p",
        "process.getuid() + ' ' + process.version",
      );
      expect(node.stdout.trim(), node.stderr).toBe(`65532 v${NODE_VERSION}`);
      const shell = ctr("run", "--rm", image.name, "shell", "/bin/sh", "-c", "true");
      expect(shell.status).not.toBe(0);
      expect(shell.stderr).toContain("no such file or directory");
    }, 180_000);
  },
);
