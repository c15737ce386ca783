import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { apiNames } from "./scaffold/names.js";
import { KUBELOOP_VERSION } from "./scaffold/versions.js";

// What a newcomer meets before any cluster is involved: the files `init` and `create api` write,
// and the errors for bad names, existing kinds, running outside a project, no cluster, a taken port.
// The whole workflow on a real control plane is workflow.test.ts.

const cli = join(import.meta.dirname, "../../dist/cli/main.js");
const biome = join(import.meta.dirname, "../../../../node_modules/.bin/biome");
const tmp = mkdtempSync(join(tmpdir(), "kubeloop-scaffold-"));
const project = join(tmp, "shipyard");
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function kubeloop(cwd: string, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `kubeloop create api …` in the project. */
const createApi = (...args: string[]) => kubeloop(project, ["create", "api", ...args]);

describe("names", () => {
  it("appends the project's domain to the group and derives the plural", () => {
    expect(apiNames({ group: "ship", version: "v1beta2", kind: "Policy", domain: "example.com" })).toEqual({
      group: "ship.example.com",
      version: "v1beta2",
      kind: "Policy",
      lower: "policy",
      plural: "policies",
      camel: "policy",
    });
    expect(
      apiNames({ group: "ship.example.com", version: "v1", kind: "CronJob", domain: "example.com" }).group,
    ).toBe("ship.example.com");
  });

  it.each([
    ["widget", "UpperCamelCase"],
    ["My-Widget", "UpperCamelCase"],
    ["Widget_2", "UpperCamelCase"],
    [`W${"x".repeat(63)}`, "must be a DNS-1035 label"],
    ["Type", 'the generated files import a name "Type" already'],
  ])("refuses the kind %s", (kind, message) => {
    expect(() => apiNames({ group: "ship", version: "v1", kind, domain: "example.com" })).toThrow(message);
  });

  it.each(["1", "v1.0", "V1", "v0", "v1gamma1", "v1alpha"])("refuses the version %s", (version) => {
    expect(() => apiNames({ group: "ship", version, kind: "Widget", domain: "example.com" })).toThrow(
      `"${version}" is not a valid API version: use v<N>, v<N>alpha<M> or v<N>beta<M>`,
    );
  });

  it.each(["Ship", "ship_yard", "-ship"])("refuses the group %s", (group) => {
    expect(() => apiNames({ group, version: "v1", kind: "Widget", domain: "example.com" })).toThrow(
      `"${group}" is not a valid group`,
    );
  });

  it("wants a group with a dot when the project has no domain", () => {
    expect(() => apiNames({ group: "ship", version: "v1", kind: "Widget" })).toThrow(
      '"ship" is not a valid API group: it must be a DNS subdomain with at least one dot',
    );
  });
});

describe("kubeloop init", () => {
  it("writes a project named after its folder, with the scripts and the kubeloop section", () => {
    const init = kubeloop(tmp, ["init", "shipyard", "--domain", "example.org", "--skip-install"]);
    expect(init.code, init.stderr).toBe(0);
    for (const file of [
      "package.json",
      "tsconfig.json",
      "vitest.config.ts",
      ".gitignore",
      "README.md",
      "AGENTS.md",
      "src/main.ts",
      "src/resources.ts",
      "src/controllers.ts",
      "src/webhooks.ts",
      "test/environment.ts",
      "test/config.test.ts",
      "test/check.test.ts",
      "vitest.e2e.config.ts",
      "test/e2e/operator.e2e.test.ts",
    ]) {
      expect(existsSync(join(project, file)), file).toBe(true);
    }
    const json = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    expect(Object.keys(json.scripts)).toEqual([
      "build",
      "test",
      "test:e2e",
      "generate",
      "run",
      "cluster",
      "start",
      "build:image",
    ]);
    expect(json.scripts["build:image"]).toBe("kubeloop build --tarball image.tar");
    // The e2e suite runs on its own config; npm test's config leaves it out.
    expect(json.scripts["test:e2e"]).toBe("vitest run --config vitest.e2e.config.ts");
    expect(readFileSync(join(project, "vitest.config.ts"), "utf8")).toContain('"test/e2e/**"');
    // The image is built by `kubeloop build`, not by a Dockerfile nothing would build.
    expect(existsSync(join(project, "Dockerfile"))).toBe(false);
    expect(json.kubeloop).toEqual({
      name: "shipyard",
      domain: "example.org",
      resources: "src/resources.ts",
      controllers: "src/controllers.ts",
      image: "shipyard:dev",
      namespace: "shipyard-system",
      // What made the project, for `kubeloop upgrade`.
      scaffold: { version: KUBELOOP_VERSION, init: { name: "shipyard", domain: "example.org" }, apis: [] },
    });
    // The project is its owner's: no licence chosen for them, the field left for them to set.
    expect(json.license).toBe("UNLICENSED");
    expect(readFileSync(join(project, "AGENTS.md"), "utf8")).toContain("## Do not edit by hand");
    expect(json.dependencies.kubeloop).toMatch(/^\^\d+\.\d+\.\d+$/);
    const readme = readFileSync(join(project, "README.md"), "utf8");
    expect(readme).toMatch(/^# shipyard\n\n```sh\nnpm run run {3}# .*\nnpm test {6}# /);
    expect(readme).toContain(
      "helm install shipyard ./charts/shipyard --namespace shipyard-system --create-namespace",
    );
  });

  it("refuses a folder that already holds a project", () => {
    const again = kubeloop(tmp, ["init", "shipyard", "--skip-install"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already has a package.json: `kubeloop init` makes a new project");
  });

  it("refuses a name that cannot name Kubernetes objects", () => {
    const bad = kubeloop(tmp, ["init", "Ship_Yard", "--skip-install"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      '"Ship_Yard" is not a valid operator name: use lower-case letters, digits and "-"',
    );
    expect(existsSync(join(tmp, "Ship_Yard", "package.json"))).toBe(false);
  });
});

describe("npm create kubeloop", () => {
  it("runs kubeloop's init with the arguments given", () => {
    const create = join(import.meta.dirname, "../../../create-kubeloop/index.js");
    const result = spawnSync(
      process.execPath,
      [create, "harbour", "--domain", "example.net", "--skip-install"],
      {
        cwd: tmp,
        encoding: "utf8",
      },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('Creating the operator project "harbour" (API groups under example.net)');
    const json = JSON.parse(readFileSync(join(tmp, "harbour/package.json"), "utf8"));
    expect(json.kubeloop.domain).toBe("example.net");
  });
});

describe("kubeloop create api", () => {
  it("adds a kind and exports it from the index modules, keeping them sorted", () => {
    for (const kind of ["Widget", "Anchor"]) {
      const created = createApi("--group", "ship", "--version", "v1", "--kind", kind);
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).toContain("run `npm install`, then `npm run generate`");
    }
    expect(readFileSync(join(project, "src/controllers.ts"), "utf8")).toMatch(
      /what they read and write\.\n\nexport \{ anchorController \} from "\.\/controllers\/anchor\.ts";\nexport \{ widgetController \} from "\.\/controllers\/widget\.ts";\n$/,
    );
    expect(readFileSync(join(project, "src/resources/widget.ts"), "utf8")).toContain(
      'group: "ship.example.org"',
    );
    expect(existsSync(join(project, "config/samples/ship_v1_widget.yaml"))).toBe(true);
  });

  it("writes cluster-scoped kinds and webhooks, and names the webhooks module in package.json", () => {
    const created = createApi(
      "--group",
      "ship",
      "--version",
      "v1alpha1",
      "--kind",
      "Dock",
      "--namespaced=false",
      "--webhook",
      "validate,default",
    );
    expect(created.code, created.stderr).toBe(0);
    expect(readFileSync(join(project, "src/resources/dock.ts"), "utf8")).toContain('scope: "Cluster"');
    const webhooks = readFileSync(join(project, "src/webhooks/dock.ts"), "utf8");
    expect(webhooks).toContain("default(dock) {");
    expect(webhooks).toContain("validate(dock, request) {");
    expect(webhooks).not.toContain("convert:");
    expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).kubeloop.webhooks).toBe(
      "src/webhooks.ts",
    );
    // Each create api, in order, in the record `kubeloop upgrade` replays.
    expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).kubeloop.scaffold.apis).toEqual([
      { group: "ship", version: "v1", kind: "Widget", namespaced: true, webhooks: [] },
      { group: "ship", version: "v1", kind: "Anchor", namespaced: true, webhooks: [] },
      {
        group: "ship",
        version: "v1alpha1",
        kind: "Dock",
        namespaced: false,
        webhooks: ["default", "validate"],
      },
    ]);
  });

  it("writes what biome accepts as formatted and lint-free", () => {
    const config = JSON.parse(readFileSync(join(import.meta.dirname, "../../../../biome.json"), "utf8"));
    delete config.$schema;
    writeFileSync(join(project, "biome.json"), JSON.stringify(config));
    const check = spawnSync(
      biome,
      ["check", "src", "test", "vitest.config.ts", "package.json", "tsconfig.json"],
      {
        cwd: project,
        encoding: "utf8",
      },
    );
    rmSync(join(project, "biome.json"));
    expect(check.status, check.stdout + check.stderr).toBe(0);
  });

  it("refuses a kind that exists already, and writes nothing", () => {
    const before = readFileSync(join(project, "src/resources.ts"), "utf8");
    const again = createApi("--group", "dock", "--version", "v2", "--kind", "Widget");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      "the kind Widget exists already in this project (src/resources/widget.ts)",
    );
    expect(readFileSync(join(project, "src/resources.ts"), "utf8")).toBe(before);
  });

  it("refuses a kind that is not a valid Kubernetes name", () => {
    const bad = createApi("--group", "ship", "--version", "v1", "--kind", "my-widget");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('"my-widget" is not a valid kind: use UpperCamelCase letters and digits');
  });

  it("names a mistyped option, without a stack trace", () => {
    const bad = createApi("--group", "ship", "--version", "v1", "--knid", "Crane");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^kubeloop: Unknown option '--knid'/);
    expect(bad.stderr).toContain("Run `kubeloop create --help` for its options.");
    expect(bad.stderr).not.toContain("    at ");
  });

  it("refuses an unknown webhook part", () => {
    const bad = createApi("--group", "ship", "--version", "v1", "--kind", "Crane", "--webhook", "mutate");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      '--webhook: unknown part "mutate" (the parts are default, validate, convert)',
    );
  });

  it("upgrade: has nothing to do at the same version, and says how to write a missing scaffold record", () => {
    const same = kubeloop(project, ["upgrade"]);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain(
      `has the scaffold of kubeloop ${KUBELOOP_VERSION} already: nothing to upgrade`,
    );
    const file = join(project, "package.json");
    const text = readFileSync(file, "utf8");
    const json = JSON.parse(text);
    delete json.kubeloop.scaffold;
    writeFileSync(file, JSON.stringify(json, null, 2));
    try {
      const missing = kubeloop(project, ["upgrade"]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('package.json: there is no "kubeloop.scaffold"');
      expect(missing.stderr).toContain('add it by hand, e.g. "scaffold": { "version":');
    } finally {
      writeFileSync(file, text);
    }
  });

  it("says how to start a project when run outside one", () => {
    const outside = mkdtempSync(join(tmp, "outside-"));
    for (const args of [
      ["create", "api", "--group", "a", "--version", "v1", "--kind", "B"],
      ["run"],
      ["install"],
    ]) {
      const result = kubeloop(outside, args);
      expect(result.code, args.join(" ")).toBe(1);
      expect(result.stderr).toContain("not a kubeloop project");
      expect(result.stderr).toContain("run `kubeloop init`");
    }
  });
});

describe("project commands without a cluster", () => {
  it("say there is no cluster when there is no kubeconfig at all", () => {
    const home = join(tmp, "home");
    mkdirSync(home, { recursive: true });
    const install = kubeloop(project, ["install"], { HOME: home, KUBECONFIG: "" });
    expect(install.code).toBe(1);
    expect(install.stderr).toContain("no cluster to install the CRDs on: KUBECONFIG is not set");
    expect(install.stderr).toContain("npm run cluster");
  });

  it("say which cluster is unreachable, and what to do", () => {
    const kubeconfig = join(tmp, "dead-kubeconfig");
    writeFileSync(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{ name: dead, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: dead, user: { token: x } }]
contexts: [{ name: dead, context: { cluster: dead, user: dead } }]
current-context: dead
`,
    );
    const deploy = kubeloop(project, ["deploy", "--image", "x"], { KUBECONFIG: kubeconfig });
    expect(deploy.code).toBe(1);
    expect(deploy.stderr).toContain(
      `no cluster reachable at context "dead" (https://127.0.0.1:1) from ${kubeconfig}`,
    );
    expect(deploy.stderr).toContain("npm run cluster");
  });

  it("run says which port is taken before it starts anything", async () => {
    const server: Server = createServer();
    const port = await new Promise<number>((resolve) =>
      server.listen(0, () => resolve((server.address() as { port: number }).port)),
    );
    try {
      const run = kubeloop(project, ["run", "--metrics-port", String(port)]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `port ${port} (metrics) is taken — is another operator or \`kubeloop run\` running?`,
      );
      expect(run.stderr).toContain("pass --metrics-port with another port");
    } finally {
      server.close();
    }
  });
});
