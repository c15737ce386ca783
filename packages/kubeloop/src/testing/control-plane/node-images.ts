import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { ControlPlaneError } from "../errors.js";

/**
 * Container images made on this machine, without a registry or Docker: the nodes' pause image, and
 * base images from Debian's packages (`tools` for tests, `nginx` for the nginx example). Each is
 * a docker-archive (what `docker save` writes and `ctr images import` reads), one layer, made
 * reproducibly (sorted entries, fixed times and owners), cached by name and recipe.
 */

/** The images the test kit can make; see {@link BASE_IMAGES}. */
export type BaseImageName = "tools" | "nginx" | "postgres";

interface ImageRecipe {
  /** The image's name, as pods refer to it. */
  readonly ref: string;
  /** Debian packages whose files make the image. */
  readonly packages: readonly string[];
  /** ELF programs in the image whose shared libraries are copied from this machine's (Debian's) files. */
  readonly linked: readonly string[];
  /** Libraries of this machine's glibc (Debian's libc6) copied in as they are, with what they load. */
  readonly hostLibraries?: readonly string[];
  /** The image's entrypoint and command. */
  readonly entrypoint: readonly string[];
  readonly cmd?: readonly string[];
  /** Extra files, path → content. */
  readonly files?: Readonly<Record<string, string>>;
  /** The user the image runs as (`uid:gid`). */
  readonly user: string;
  readonly exposedPorts?: readonly number[];
  /** Environment variables (`NAME=value`); PATH is {@link DEFAULT_PATH} unless given. */
  readonly env?: readonly string[];
}

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Debian 12's PostgreSQL 15: where its programs live (Debian keeps each major version apart). */
const PG_BIN = "/usr/lib/postgresql/15/bin";

/** Base images made from Debian 12's packages; the tag is the package's version. */
export const BASE_IMAGES: Readonly<Record<BaseImageName, ImageRecipe>> = {
  // A shell and the usual tools (busybox: sh, nc, nslookup, wget, sleep, …), and curl for HTTPS
  // that checks certificates (busybox's TLS cannot talk to an API server).
  tools: {
    ref: "kubeloop.local/tools:bookworm",
    // Debian's dynamically linked busybox: the static one's glibc cannot load NSS to resolve names.
    packages: ["busybox", "curl", "libcurl4"],
    linked: ["/bin/busybox", "/usr/bin/curl"],
    hostLibraries: ["/lib/x86_64-linux-gnu/libnss_dns.so.2", "/lib/x86_64-linux-gnu/libnss_files.so.2"],
    entrypoint: [],
    cmd: ["/bin/sh"],
    user: "0:0",
  },
  // Unprivileged, as nginxinc/nginx-unprivileged: a numeric non-root user, port 8080, files in /tmp,
  // so its pods pass Pod Security `restricted`.
  nginx: {
    ref: "kubeloop.local/nginx:1.22.1",
    packages: ["nginx", "nginx-common"],
    linked: ["/usr/sbin/nginx"],
    entrypoint: ["/usr/sbin/nginx", "-e", "stderr", "-g", "daemon off;"],
    files: {
      "/etc/nginx/nginx.conf": `worker_processes 1;
pid /tmp/nginx.pid;
events { worker_connections 256; }
http {
  include /etc/nginx/mime.types;
  access_log /dev/stdout;
  client_body_temp_path /tmp/client_temp;
  proxy_temp_path /tmp/proxy_temp;
  fastcgi_temp_path /tmp/fastcgi_temp;
  uwsgi_temp_path /tmp/uwsgi_temp;
  scgi_temp_path /tmp/scgi_temp;
  server {
    listen 8080 default_server;
    root /var/www/html;
    location / { index index.html; }
  }
}
`,
      "/var/www/html/index.html": "<html><body><h1>Welcome to nginx!</h1></body></html>\n",
      // What apps' readiness probes ask for (the MyApp example's pods probe /healthz).
      "/var/www/html/healthz": "ok\n",
    },
    user: "65532:65532",
    exposedPorts: [8080],
  },
  // PostgreSQL 15 as Debian 12 ships it: the server, initdb, the client programs (psql, pg_dump,
  // pg_basebackup, pg_upgrade, ...), busybox for the shell initdb and scripts need, tzdata for the
  // server's time zones (Debian builds it with the system's). Runs as the non-root user; its data
  // directory and socket directory are the pod's to give (a volume, /tmp).
  postgres: {
    ref: "kubeloop.local/postgres:15",
    packages: ["postgresql-15", "postgresql-client-15", "libpq5", "busybox", "tzdata"],
    linked: [
      "/bin/busybox",
      ...["postgres", "initdb", "pg_ctl", "psql", "pg_dump", "pg_dumpall", "pg_restore", "pg_isready"].map(
        (program) => `${PG_BIN}/${program}`,
      ),
      ...["pg_basebackup", "pg_upgrade", "pg_controldata", "pg_rewind", "pg_resetwal"].map(
        (program) => `${PG_BIN}/${program}`,
      ),
    ],
    hostLibraries: ["/lib/x86_64-linux-gnu/libnss_dns.so.2", "/lib/x86_64-linux-gnu/libnss_files.so.2"],
    entrypoint: [`${PG_BIN}/postgres`],
    user: "65532:65532",
    exposedPorts: [5432],
    env: [`PATH=${PG_BIN}:${DEFAULT_PATH}`],
  },
};

/** The minimal /etc a container expects: root, the conventional non-root user, nobody. */
const ETC_FILES: Record<string, string> = {
  "/etc/passwd":
    "root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
  "/etc/group": "root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n",
  "/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
};

/** Makes (or finds in `cacheDir`) a base image's archive; returns its path and name. */
export function baseImage(name: BaseImageName, cacheDir: string): { path: string; ref: string } {
  const recipe = BASE_IMAGES[name];
  const key = createHash("sha256").update(JSON.stringify(recipe)).digest("hex").slice(0, 12);
  const path = join(cacheDir, "images", `${name}-${key}.tar`);
  if (!existsSync(path)) {
    const work = join(cacheDir, "images", `.build-${name}-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    const rootfs = join(work, "rootfs");
    mkdirSync(rootfs, { recursive: true });
    try {
      for (const deb of downloadDebs(recipe.packages, join(cacheDir, "debs")))
        run("dpkg-deb", ["-x", deb, rootfs]);
      for (const program of recipe.linked) copySharedLibraries(join(rootfs, program), rootfs);
      for (const library of recipe.hostLibraries ?? []) {
        copyFile(library, rootfs);
        copySharedLibraries(library, rootfs);
      }
      if (recipe.packages.includes("busybox")) installBusyboxLinks(rootfs);
      for (const [file, content] of Object.entries({ ...ETC_FILES, ...recipe.files })) {
        mkdirSync(join(rootfs, dirname(file)), { recursive: true });
        writeFileSync(join(rootfs, file), content);
      }
      for (const dir of ["tmp", "run"]) mkdirSync(join(rootfs, dir), { recursive: true });
      chmodSync(join(rootfs, "tmp"), 0o1777);
      for (const doc of ["usr/share/doc", "usr/share/man", "usr/share/lintian"])
        rmSync(join(rootfs, doc), { recursive: true, force: true });
      writeDockerArchive(work, rootfs, path, {
        ref: recipe.ref,
        entrypoint: recipe.entrypoint,
        cmd: recipe.cmd ?? [],
        user: recipe.user,
        exposedPorts: recipe.exposedPorts ?? [],
        env: recipe.env ?? [],
      });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  return { path, ref: recipe.ref };
}

/**
 * Imports an image archive (docker-archive or OCI layout) into one containerd's `k8s.io` namespace,
 * where the kubelet finds it; `pinned` keeps it from image garbage collection (the pause image).
 * Returns the image names it held.
 */
export function importImage(ctr: string, socket: string, archive: string, pinned = false): string[] {
  const args = ["--address", socket, "-n", "k8s.io", "images", "import", "--digests"];
  if (pinned) args.push("--label", "io.cri-containerd.pinned=pinned");
  run(ctr, [...args, archive]);
  const listed = run(ctr, ["--address", socket, "-n", "k8s.io", "images", "list", "-q"]);
  const names = new Set(listed.split("\n").filter((name) => name && !name.startsWith("sha256:")));
  return archiveNames(archive).filter((name) => names.has(name));
}

/** The names an archive's index (OCI) or manifest (docker-archive) gives its images. */
function archiveNames(archive: string): string[] {
  const listing = run("tar", ["-tf", archive]);
  const names: string[] = [];
  if (listing.split("\n").includes("manifest.json")) {
    const manifest = JSON.parse(run("tar", ["-xOf", archive, "manifest.json"])) as { RepoTags?: string[] }[];
    for (const entry of manifest) names.push(...(entry.RepoTags ?? []).map(normalizeName));
  }
  if (listing.split("\n").includes("index.json")) {
    const index = JSON.parse(run("tar", ["-xOf", archive, "index.json"])) as {
      manifests?: { annotations?: Record<string, string> }[];
    };
    for (const entry of index.manifests ?? []) {
      const name = entry.annotations?.["io.containerd.image.name"];
      if (name) names.push(normalizeName(name));
    }
  }
  return names;
}

/** `nginx:1` → `docker.io/library/nginx:1`, as containerd names what it imports. */
function normalizeName(name: string): string {
  const [first = "", ...rest] = name.split("/");
  const hasDomain = rest.length > 0 && (first.includes(".") || first.includes(":") || first === "localhost");
  if (hasDomain) return name;
  return rest.length === 0 ? `docker.io/library/${name}` : `docker.io/${name}`;
}

/** The pause image, from the binary built with the node stack (see assets/build.ts). */
export function pauseImage(pauseBinary: string, ref: string, cacheDir: string): string {
  return singleBinaryImage(pauseBinary, { ref, user: "65535:65535", cacheDir });
}

/**
 * A one-layer image (docker-archive, made once into `<cacheDir>/images/`) holding a static binary
 * at `/<its name>` as the entrypoint, run as `user`: what a Go server such as metrics-server needs.
 * Returns the archive's path, for `plane.loadImage`.
 */
export function singleBinaryImage(
  binary: string,
  image: { ref: string; user: string; cacheDir: string },
): string {
  const name = basename(binary);
  return filesImage({ ...image, files: { [`/${name}`]: binary }, entrypoint: [`/${name}`] });
}

/** What {@link filesImage} puts in an image. */
export interface FilesImage {
  ref: string;
  user: string;
  cacheDir: string;
  /** Path in the image → this machine's file (made executable). */
  files: Readonly<Record<string, string>>;
  /** Path in the image → text content. */
  texts?: Readonly<Record<string, string>>;
  /** Paths in the image of dynamically linked programs whose shared libraries (this machine's) are copied in. */
  linked?: readonly string[];
  entrypoint?: readonly string[];
  cmd?: readonly string[];
}

/**
 * A one-layer image of files from this machine (docker-archive, made once into `<cacheDir>/images/`,
 * keyed by its contents), with a world-writable /tmp: Go servers write certificates and caches there.
 */
export function filesImage(image: FilesImage): string {
  const key = createHash("sha256").update(
    JSON.stringify([image.ref, image.user, image.entrypoint, image.cmd]),
  );
  for (const [path, source] of Object.entries(image.files)) key.update(path).update(readFileSync(source));
  key.update(JSON.stringify([image.texts, image.linked]));
  const name = basename(Object.keys(image.files)[0] ?? "image");
  const path = join(image.cacheDir, "images", `${name}-${key.digest("hex").slice(0, 12)}.tar`);
  if (existsSync(path)) return path;
  const work = join(image.cacheDir, "images", `.build-${name}-${process.pid}`);
  const rootfs = join(work, "rootfs");
  mkdirSync(rootfs, { recursive: true });
  try {
    for (const [target, source] of Object.entries(image.files)) {
      mkdirSync(dirname(join(rootfs, target)), { recursive: true });
      copyFileSync(source, join(rootfs, target));
      chmodSync(join(rootfs, target), 0o755);
    }
    for (const [target, content] of Object.entries(image.texts ?? {})) {
      mkdirSync(dirname(join(rootfs, target)), { recursive: true });
      writeFileSync(join(rootfs, target), content);
    }
    for (const program of image.linked ?? []) copySharedLibraries(join(rootfs, program), rootfs);
    mkdirSync(join(rootfs, "tmp"));
    chmodSync(join(rootfs, "tmp"), 0o1777);
    writeDockerArchive(work, rootfs, path, {
      ref: image.ref,
      entrypoint: image.entrypoint ?? [],
      cmd: image.cmd ?? [],
      user: image.user,
      exposedPorts: [],
      env: [],
    });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return path;
}

interface ImageConfig {
  ref: string;
  entrypoint: readonly string[];
  cmd: readonly string[];
  user: string;
  exposedPorts: readonly number[];
  env: readonly string[];
}

/** One layer from `rootfs`, its config and manifest, in a docker-archive at `target` (atomically). */
function writeDockerArchive(work: string, rootfs: string, target: string, image: ImageConfig): void {
  const archive = join(work, "archive");
  mkdirSync(archive, { recursive: true });
  const layerTar = join(archive, "layer.tar");
  reproducibleTar(rootfs, layerTar, ["."]);
  const diffId = `sha256:${sha256(readFileSync(layerTar))}`;
  const config = {
    architecture: "amd64",
    os: "linux",
    created: "1970-01-01T00:00:00Z",
    config: {
      Entrypoint: image.entrypoint.length ? image.entrypoint : null,
      Cmd: image.cmd.length ? image.cmd : null,
      User: image.user,
      Env: image.env.some((v) => v.startsWith("PATH=")) ? image.env : [`PATH=${DEFAULT_PATH}`, ...image.env],
      WorkingDir: "/",
      ExposedPorts: Object.fromEntries(image.exposedPorts.map((port) => [`${port}/tcp`, {}])),
      Labels: { "org.opencontainers.image.vendor": "kubeloop test kit" },
    },
    rootfs: { type: "layers", diff_ids: [diffId] },
    history: [{ created: "1970-01-01T00:00:00Z", created_by: "kubeloop/testing" }],
  };
  const configText = JSON.stringify(config);
  const configName = `${sha256(Buffer.from(configText))}.json`;
  writeFileSync(join(archive, configName), configText);
  writeFileSync(
    join(archive, "manifest.json"),
    JSON.stringify([{ Config: configName, RepoTags: [image.ref], Layers: ["layer.tar"] }]),
  );
  mkdirSync(dirname(target), { recursive: true });
  const partial = `${target}.${process.pid}.partial`;
  reproducibleTar(archive, partial, ["manifest.json", configName, "layer.tar"]);
  renameSync(partial, target);
}

/** GNU tar with everything that varies between builds fixed. */
function reproducibleTar(dir: string, target: string, entries: string[]): void {
  run("tar", [
    "--sort=name",
    "--mtime=@0",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--format=gnu",
    "-C",
    dir,
    "-cf",
    target,
    ...entries,
  ]);
}

/** Downloads the packages' .deb files (not installed) into `dir`, once. */
function downloadDebs(packages: readonly string[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const have = () => readdirSync(dir).filter((file) => file.endsWith(".deb"));
  const missing = packages.filter((name) => !have().some((file) => file.startsWith(`${name}_`)));
  if (missing.length > 0) {
    let result = spawnSync("apt-get", ["download", ...missing], { cwd: dir, encoding: "utf8" });
    if (result.status !== 0 && process.getuid?.() === 0) {
      // A fresh machine's package lists may be empty: refresh them once, as root.
      spawnSync("apt-get", ["update", "-qq"], { encoding: "utf8" });
      result = spawnSync("apt-get", ["download", ...missing], { cwd: dir, encoding: "utf8" });
    }
    if (result.status !== 0)
      throw new ControlPlaneError(
        `Could not download Debian's ${missing.join(", ")} to make an image: ${(result.error?.message ?? result.stderr).trim()}. ` +
          "Run `apt-get update` (as root) and try again; Debian's package archive must be reachable.",
      );
  }
  return packages.map((name) => {
    const file = have().find((entry) => entry.startsWith(`${name}_`));
    if (!file) throw new ControlPlaneError(`apt-get download ${name} left no .deb in ${dir}`);
    return join(dir, file);
  });
}

/**
 * Copies the shared libraries `program` needs into `rootfs`: those its packages brought are found
 * there first; the rest are this (Debian) machine's own.
 */
function copySharedLibraries(program: string, rootfs: string): void {
  const inImage = ["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"]
    .map((dir) => join(rootfs, dir))
    .join(":");
  const output = run("ldd", [program], { LD_LIBRARY_PATH: inImage });
  const missing = [...output.matchAll(/^\s*(\S+) => not found/gm)].map((m) => m[1]);
  if (missing.length > 0)
    throw new ControlPlaneError(
      `${program} needs ${missing.join(", ")}, which this machine lacks: install the Debian packages that ship them.`,
    );
  for (const match of output.matchAll(/(\/[^\s)]+)/g)) {
    const library = match[1] as string;
    if (library === program || library.startsWith(`${rootfs}/`) || !existsSync(library)) continue;
    copyFile(library, rootfs);
  }
}

/** Copies a file of this machine to the same path in `rootfs`. */
function copyFile(path: string, rootfs: string): void {
  const target = join(rootfs, path);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(path, target);
}

/** busybox ships one binary; its applets (sh, wget, nc, …) are links made here. */
function installBusyboxLinks(rootfs: string): void {
  const busybox = join(rootfs, "bin", "busybox");
  const applets = run(busybox, ["--list-full"]).split("\n").filter(Boolean);
  for (const applet of applets) {
    const target = join(rootfs, applet);
    if (existsSync(target)) continue;
    mkdirSync(dirname(target), { recursive: true });
    copyLink(target);
  }
  function copyLink(target: string): void {
    spawnSync("ln", ["-s", "/bin/busybox", target]);
  }
}

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function run(command: string, args: string[], env?: NodeJS.ProcessEnv): string {
  const result = spawnSync(command, args, {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  if (result.error || result.status !== 0)
    throw new ControlPlaneError(
      `\`${command} ${args.slice(0, 4).join(" ")}\` failed: ${result.error?.message ?? result.stderr}`,
    );
  return result.stdout;
}
