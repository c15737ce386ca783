import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AssetsError } from "./errors.js";
import { type GoRun, runGo } from "./go.js";
import { buildKarmada, KARMADA_MODULE } from "./karmada-build.js";
import { type ComponentName, type ComponentSpec, GRPC_HEALTH_PROBE_VERSION } from "./versions.js";
/**
 * The recipes of the Go builds: per component, the steps that turn its pinned module into binaries
 * (a wrapper module, `go get`, `go build` with the right flags), and the progress a long compile
 * reports. build.ts runs one under the component's lock and installs what it made.
 */

export interface RecipeContext {
  spec: ComponentSpec;
  work: string;
  out: string;
  run: GoRun;
  goBinary: string;
  progress: (line: string) => void;
  counter: PackageCounter;
}

type Recipe = (context: RecipeContext) => Promise<void>;

/** One function per component: the steps that turn its module into binaries. */
export const RECIPES: Record<ComponentName, Recipe> = {
  kubernetes: buildKubernetes,

  /** The node's kubelet and kube-proxy, from the same wrapper as the control plane, and the pause binary. */
  async "kubernetes-node"(context) {
    await buildKubernetes(context);
    await buildPause(context);
  },

  /** containerd has no `replace` directives; btrfs and devmapper need cgo and libraries we do not use. */
  async containerd(context) {
    const version = `v${context.spec.version}`;
    const base = "github.com/containerd/containerd/v2";
    await download(context, "containerd", "containerd", `${base}@${version}`);
    const packages = ["containerd", "containerd-shim-runc-v2", "ctr"].map((cmd) => `${base}/cmd/${cmd}`);
    await compile(context, packages, [
      "-tags=no_btrfs,no_devmapper,no_zfs",
      `-ldflags=-s -w -X ${base}/version.Version=${version} -X ${base}/version.Package=${base}`,
    ]);
  },

  /**
   * runc needs cgo (its nsenter is C) and libseccomp, without which every pod asking for the
   * RuntimeDefault seccomp profile (Pod Security `restricted`) fails to start.
   */
  async runc(context) {
    requireCgoToolchain();
    const cgo = { ...context, run: { ...context.run, env: { ...context.run.env, CGO_ENABLED: "1" } } };
    await download(cgo, "runc", "runc", `github.com/opencontainers/runc@v${context.spec.version}`);
    await compile(
      cgo,
      ["github.com/opencontainers/runc"],
      ["-tags=seccomp", `-ldflags=-s -w -X main.version=${context.spec.version}`],
    );
  },

  /** The plugins kind and local-up-cluster install: ptp for pod links, host-local for addresses, portmap, loopback. */
  async "cni-plugins"(context) {
    const base = "github.com/containernetworking/plugins";
    await download(context, "cni-plugins", "CNI plugins", `${base}@v${context.spec.version}`);
    const paths = {
      ptp: "main/ptp",
      "host-local": "ipam/host-local",
      loopback: "main/loopback",
      portmap: "meta/portmap",
    };
    await compile(
      context,
      Object.values(paths).map((path) => `${base}/plugins/${path}`),
      [`-ldflags=-s -w -X ${base}/pkg/utils/buildversion.BuildVersion=v${context.spec.version}`],
    );
  },

  /** CoreDNS's version is a constant in its source. */
  async coredns(context) {
    await download(context, "coredns", "CoreDNS", `github.com/coredns/coredns@v${context.spec.version}`);
    await compile(context, ["github.com/coredns/coredns"], ["-ldflags=-s -w"]);
  },

  /** distribution's registry: the image registry the nodes pull from. */
  async registry(context) {
    const base = "github.com/distribution/distribution/v3";
    await download(context, "registry", "distribution", `${base}/cmd/registry@v${context.spec.version}`);
    await compile(
      context,
      [`${base}/cmd/registry`],
      [
        `-ldflags=-s -w -X ${base}/version.version=v${context.spec.version} -X ${base}/version.mainpkg=${base}`,
      ],
    );
  },

  /** etcd's server module has a main package but `replace` directives, so it too needs a wrapper. */
  async etcd(context) {
    await download(context, "etcd", "etcd", `go.etcd.io/etcd/server/v3@v${context.spec.version}`);
    await compile(context, ["go.etcd.io/etcd/server/v3"], ["-ldflags=-s -w"], "etcd");
  },

  /**
   * kwok has no `replace` directives; we still build it through a wrapper so that progress and flags
   * match the others, and so its stage definitions (which it embeds, and which the standalone
   * controller needs on its command line) can be copied from the module.
   */
  async kwok(context) {
    await download(context, "kwok", "kwok", `sigs.k8s.io/kwok/cmd/kwok@v${context.spec.version}`);
    // kwok's version is a constant in its source, so no version ldflags are needed.
    await compile(context, ["sigs.k8s.io/kwok/cmd/kwok"], ["-ldflags=-s -w"]);
    const moduleDir = await moduleField(context, "Locating the kwok module", "{{.Dir}}", "sigs.k8s.io/kwok");
    writeFileSync(join(context.out, "stages.yaml"), kwokStages(moduleDir));
  },

  /**
   * Helm has no `replace` directives. Its version is a variable its Makefile sets with -X; without
   * it `helm version` says only the minor and `helm lint` cannot tell which release checked a chart.
   */
  async helm(context) {
    const { spec } = context;
    await download(context, "helm", "Helm", `helm.sh/helm/v3/cmd/helm@v${spec.version}`);
    // As Helm's Makefile: without the Kubernetes version of its client-go, `helm template` and
    // `helm lint` assume Kubernetes 1.20 and refuse charts that declare a newer kubeVersion.
    const clientGo = await moduleField(
      context,
      "Reading Helm's client-go version",
      "{{.Version}}",
      "k8s.io/client-go",
    ); // v0.37.0: Kubernetes 1.37
    const minor = clientGo.split(".")[1];
    if (!minor) throw new AssetsError(`Helm's k8s.io/client-go version "${clientGo}" is not v0.X.Y`);
    const ldflags = [
      "-s",
      "-w",
      `-X helm.sh/helm/v3/internal/version.version=v${spec.version}`,
      ...["pkg/lint/rules", "pkg/chartutil"].flatMap((pkg) => [
        `-X helm.sh/helm/v3/${pkg}.k8sVersionMajor=1`,
        `-X helm.sh/helm/v3/${pkg}.k8sVersionMinor=${minor}`,
      ]),
    ];
    await compile(context, ["helm.sh/helm/v3/cmd/helm"], [`-ldflags=${ldflags.join(" ")}`]);
  },

  /** OLM's bundle validator, as operator-framework/api ships it (its own command, no wrapper code). */
  async olm(context) {
    const command = "github.com/operator-framework/api/cmd/operator-verify";
    await download(context, "olm", "operator-framework/api", `${command}@v${context.spec.version}`);
    await compile(context, [command], ["-ldflags=-s -w"]);
  },

  /**
   * OLM v0's operators and the utilities its pods run (cpb and copy-content copy bundle and catalog
   * content, opm unpacks bundles and serves catalogs), from one wrapper module so opm is the
   * operator-registry release OLM requires; its CRDs are copied from the module. grpc-health-probe,
   * which probes catalog pods, has a wrapper of its own so it does not move OLM's dependencies.
   */
  async "olm-lifecycle"(context) {
    const base = "github.com/operator-framework/operator-lifecycle-manager";
    const registry = "github.com/operator-framework/operator-registry";
    const { version } = context.spec;
    await download(context, "olm-lifecycle", "operator-lifecycle-manager", `${base}@v${version}`);
    const registryVersion = await moduleField(context, "Reading opm's version", "{{.Version}}", registry);
    const commands = ["olm", "catalog", "copy-content"].map((command) => `${base}/cmd/${command}`);
    const olmVersion = `-X ${base}/pkg/version.OLMVersion=${version}`;
    await compile(context, [...commands, `${base}/util/cpb`], [`-ldflags=-s -w ${olmVersion}`]);
    // As operator-registry's Makefile: openpgp in Go instead of gpgme (cgo), which opm never uses here.
    await compile(
      context,
      [`${registry}/cmd/opm`],
      [
        "-tags=json1,containers_image_openpgp",
        `-ldflags=-s -w -X ${registry}/cmd/opm/version.opmVersion=${registryVersion}`,
      ],
    );
    const moduleDir = await moduleField(context, "Locating the OLM module", "{{.Dir}}", base);
    const crds = join(moduleDir, "deploy", "chart", "crds");
    if (!existsSync(crds)) throw new AssetsError(`OLM's module has no deploy/chart/crds; its layout changed`);
    cpSync(crds, join(context.out, "crds"), { recursive: true });
    const probeWork = join(context.work, "grpc-health-probe");
    mkdirSync(probeWork, { recursive: true });
    const probe = { ...context, work: probeWork, run: { ...context.run, cwd: probeWork } };
    const health = "github.com/grpc-ecosystem/grpc-health-probe";
    await download(
      probe,
      "grpc-health-probe",
      "grpc-health-probe",
      `${health}@v${GRPC_HEALTH_PROBE_VERSION}`,
    );
    await compile(
      probe,
      [health],
      [`-ldflags=-s -w -X main.versionTag=v${GRPC_HEALTH_PROBE_VERSION}`],
      "grpc_health_probe",
    );
  },

  /** Karmada's mains, CRDs and webhook configuration (karmada-build.ts). */
  karmada: (context) =>
    buildKarmada(context, {
      download,
      compile: (c, packages, flags) => compile(c, packages, flags),
      moduleDir: (c) => moduleField(c, "Locating the Karmada module", "{{.Dir}}", KARMADA_MODULE),
    }),
};

/**
 * `k8s.io/kubernetes` requires its staging modules at the non-existent v0.0.0 and maps them with
 * `replace … => ./staging/…`, which only the main module may do. So we write a wrapper module that
 * replaces every staging module with its published twin (v1.X.Y ↔ v0.X.Y), taking the list from
 * the tag's own go.mod so it is right for any release. Builds the component's Go binaries.
 */
async function buildKubernetes(context: RecipeContext): Promise<void> {
  const { spec, run, goBinary } = context;
  const tag = `v${spec.version}`;
  const staging = `v0.${spec.version.slice(spec.version.indexOf(".") + 1)}`;
  await initModule(context, "kubeloop.local/kubernetes");
  context.progress(`  resolving k8s.io/kubernetes@${tag} and its staging modules`);
  const download = JSON.parse(
    await runGo(
      "Reading k8s.io/kubernetes's go.mod",
      ["mod", "download", "-json", `k8s.io/kubernetes@${tag}`],
      run,
      goBinary,
    ),
  ) as { GoMod?: string; Error?: string };
  if (download.Error || !download.GoMod) {
    throw new AssetsError(
      `Could not fetch k8s.io/kubernetes@${tag} from the Go module proxy: ${download.Error}`,
    );
  }
  const upstream = parseGoMod(readFileSync(download.GoMod, "utf8"));
  const edits = [`-go=${upstream.go}`, `-require=k8s.io/kubernetes@${tag}`];
  // GODEBUG defaults come only from the main module: mirror upstream's so TLS/x509 behave as released.
  if (upstream.godebugDefault) edits.push(`-godebug=default=${upstream.godebugDefault}`);
  for (const module of upstream.stagingModules) edits.push(`-replace=${module}=${module}@${staging}`);
  await runGo("Writing the wrapper go.mod", ["mod", "edit", ...edits], run, goBinary);
  const packages = spec.binaries
    .filter((binary) => binary !== "pause")
    .map((binary) => `k8s.io/kubernetes/cmd/${binary}`);
  context.progress(`  downloading modules (${upstream.stagingModules.length} staging modules at ${staging})`);
  await runGo(
    "Downloading Kubernetes modules",
    ["get", ...packages.map((p) => `${p}@${tag}`)],
    run,
    goBinary,
  );
  const minor = spec.version.split(".")[1];
  const buildDate = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const ldflags = ["-s", "-w"];
  // Without these, /version says v0.0.0 and kubectl and kwok cannot tell what they talk to.
  for (const pkg of ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]) {
    ldflags.push(
      `-X ${pkg}.gitVersion=${tag}`,
      `-X ${pkg}.gitMajor=1`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=${buildDate}`,
    );
  }
  await compile(context, packages, ["-tags=selinux,notest,grpcnotrace", `-ldflags=${ldflags.join(" ")}`]);
}

/** The sandbox ("pause") binary, compiled as upstream's Makefile does from the module's pause.c. */
async function buildPause(context: RecipeContext): Promise<void> {
  const moduleDir = await moduleField(
    context,
    "Locating the kubernetes module",
    "{{.Dir}}",
    "k8s.io/kubernetes",
  );
  const source = join(moduleDir, "build", "pause", "linux", "pause.c");
  const version = /^TAG\s*\?=\s*(\S+)/m.exec(
    readFileSync(join(moduleDir, "build", "pause", "Makefile"), "utf8"),
  )?.[1];
  if (!version) throw new AssetsError(`k8s.io/kubernetes's build/pause/Makefile has no TAG`);
  requireCgoToolchain();
  const result = spawnSync(
    "gcc",
    ["-Os", "-Wall", "-Werror", "-static", `-DVERSION=v${version}`, "-o", join(context.out, "pause"), source],
    { encoding: "utf8" },
  );
  if (result.status !== 0)
    throw new AssetsError(`Compiling pause.c failed: ${result.error?.message ?? result.stderr}`);
  writeFileSync(join(context.out, "pause.version"), `${version}\n`);
}

/** runc and pause are C (cgo); say what to install rather than fail inside the compiler. */
function requireCgoToolchain(): void {
  const missing = [
    ["gcc", ["--version"]],
    ["pkg-config", ["--exists", "libseccomp"]],
  ].filter(([binary, args]) => spawnSync(binary as string, args as string[]).status !== 0);
  if (missing.length > 0) {
    throw new AssetsError(
      "Building the node stack (runc, pause) needs a C compiler and libseccomp's headers: " +
        "apt-get install gcc libc6-dev pkg-config libseccomp-dev (as root), then run again.",
    );
  }
}

/** The stages kwokctl installs by default: nodes become Ready and heartbeat; pods run, finish and go. */
const KWOK_STAGE_FILES = [
  "kustomize/stage/node/fast/node-initialize.yaml",
  "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
  "kustomize/stage/pod/fast/pod-ready.yaml",
  "kustomize/stage/pod/fast/pod-complete.yaml",
  "kustomize/stage/pod/fast/pod-delete.yaml",
];

function kwokStages(moduleDir: string): string {
  return KWOK_STAGE_FILES.map((file) => {
    const path = join(moduleDir, file);
    if (!existsSync(path)) throw new AssetsError(`kwok's module has no ${file}; its layout changed`);
    return readFileSync(path, "utf8").trim();
  }).join("\n---\n");
}

async function initModule({ work, run, goBinary }: RecipeContext, module: string): Promise<void> {
  if (!existsSync(join(work, "go.mod"))) {
    await runGo("Creating the wrapper module", ["mod", "init", module], run, goBinary);
  }
}

/** Starts a recipe's wrapper module `kubeloop.local/<name>` and downloads what it builds (`go get`). */
async function download(context: RecipeContext, name: string, what: string, required: string): Promise<void> {
  await initModule(context, `kubeloop.local/${name}`);
  context.progress("  downloading modules");
  await runGo(`Downloading ${what} modules`, ["get", required], context.run, context.goBinary);
}

/** A field (`go list -m -f <format>`) of a module the wrapper requires, such as its folder or version. */
async function moduleField(
  context: RecipeContext,
  what: string,
  format: string,
  module: string,
): Promise<string> {
  return (await runGo(what, ["list", "-m", "-f", format, module], context.run, context.goBinary)).trim();
}

/** `go build -v` prints each package as it compiles; counting them against `go list -deps` is progress. */
async function compile(
  context: RecipeContext,
  packages: string[],
  flags: string[],
  outputName?: string,
): Promise<void> {
  const { run, goBinary, out, counter } = context;
  const deps = await runGo(
    "Listing packages",
    ["list", "-deps", ...flagsForList(flags), ...packages],
    run,
    goBinary,
  );
  counter.reset(deps.split("\n").filter(Boolean).length);
  const names = outputName ? [outputName] : packages.map((p) => p.split("/").pop());
  context.progress(`  compiling ${names.join(", ")} (${counter.total} packages)`);
  const output = outputName ? join(out, outputName) : `${out}/`;
  await runGo("Compiling", ["build", "-v", "-trimpath", ...flags, "-o", output, ...packages], run, goBinary);
}

function flagsForList(flags: string[]): string[] {
  return flags.filter((flag) => flag.startsWith("-tags="));
}

export interface UpstreamGoMod {
  go: string;
  godebugDefault: string | undefined;
  stagingModules: string[];
}

/** Reads what the wrapper must mirror from `k8s.io/kubernetes`'s go.mod. */
export function parseGoMod(text: string): UpstreamGoMod {
  const go = /^go\s+(\S+)/m.exec(text)?.[1];
  if (!go) throw new AssetsError("k8s.io/kubernetes's go.mod has no go directive");
  const godebugDefault = /^godebug\s+\(?\s*default=(\S+)/m.exec(text)?.[1];
  const stagingModules = [...text.matchAll(/^\s*(k8s\.io\/[^\s]+)\s+=>\s+\.\/staging\//gm)]
    .map((match) => match[1] as string)
    .sort();
  if (stagingModules.length === 0)
    throw new AssetsError("k8s.io/kubernetes's go.mod lists no staging modules");
  return { go, godebugDefault, stagingModules };
}

export class PackageCounter {
  total = 0;
  private done = 0;

  reset(total: number): void {
    this.total = total;
    this.done = 0;
  }

  see(line: string): void {
    // `go build -v` prints bare import paths; everything else (downloads, errors) has spaces or colons.
    if (this.total > 0 && /^[\w.\-/]+$/.test(line)) this.done++;
  }

  describe(): string {
    if (this.total === 0) return "preparing";
    return `compiled ${Math.min(this.done, this.total)} of up to ${this.total} packages`;
  }
}
