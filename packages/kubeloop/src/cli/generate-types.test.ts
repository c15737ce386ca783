import { execFile, spawnSync } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, cachedProjectDir, runCli } from "../../test/cli-project.js";
import { startPlane, stopPlane } from "../../test/helpers.js";
import type { Client } from "../client/index.js";
import { resourceType } from "../client/index.js";
import type { ControlPlane } from "../testing/control-plane.js";

const fixtures = join(import.meta.dirname, "../../test/fixtures/third-party-crds");
const tsc = join(import.meta.dirname, "../../../../node_modules/.bin/tsc");
/** Each real CRD (README.md says where from), its sample, and the CRD's name on a cluster. */
const CRDS = [
  {
    file: "snapshot.storage.k8s.io_volumesnapshots.yaml",
    sample: "volumesnapshot.ts",
    name: "volumesnapshots.snapshot.storage.k8s.io",
  },
  {
    file: "monitoring.coreos.com_servicemonitors.yaml",
    sample: "servicemonitor.ts",
    name: "servicemonitors.monitoring.coreos.com",
  },
  {
    file: "gateway.networking.k8s.io_httproutes.yaml",
    sample: "httproute.ts",
    name: "httproutes.gateway.networking.k8s.io",
  },
];

const typesOf = (cwd: string, source: string) => {
  const result = runCli(cwd, ["generate", "types", source, "--out", join(cwd, "types.ts")]);
  expect(result.code, result.stderr).toBe(0);
  return readFileSync(join(cwd, "types.ts"), "utf8");
};
/** The CLI run without blocking this process (which serves the URL it reads). */
const runCliAsync = (cwd: string, args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
const body = (module: string) => module.slice(module.indexOf("\n") + 1); // without the header line

describe("kubeloop generate types on real third-party CRDs", () => {
  for (const crd of CRDS) {
    it(`${crd.file}: the sample type-checks, and the lines the types must refuse are refused`, () => {
      const dir = cachedProjectDir("typegen");
      typesOf(dir, join(fixtures, crd.file));
      copyFileSync(join(fixtures, "samples", crd.sample), join(dir, "sample.ts"));
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          extends: "../../../tsconfig.base.json",
          compilerOptions: { noEmit: true, allowImportingTsExtensions: true },
          include: ["*.ts"],
        }),
      );
      // Each @ts-expect-error in the sample fails the check if its line is not refused.
      const check = spawnSync(tsc, ["-p", dir], { encoding: "utf8" });
      expect(check.stdout + check.stderr).toBe("");
      expect(check.status).toBe(0);
    });
  }
});

describe("kubeloop generate types against a cluster", () => {
  let plane: ControlPlane;
  let client: Client;
  beforeAll(async () => ({ plane, client } = await startPlane({ profile: "apiserver", crds: [fixtures] })));
  afterAll(() => stopPlane(plane, client));

  it("a CRD named on the cluster gives the types its file gives", () => {
    const dir = cachedProjectDir("typegen-live");
    const fromFile = typesOf(dir, join(fixtures, CRDS[1]?.file ?? ""));
    const live = spawnSync(
      process.execPath,
      [join(import.meta.dirname, "../../dist/cli/main.js"), "generate", "types", CRDS[1]?.name ?? ""],
      {
        encoding: "utf8",
        env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
      },
    );
    expect(live.status, live.stderr).toBe(0);
    expect(body(live.stdout)).toBe(body(fromFile));
  });

  it("the typed samples are objects the real API server accepts", async () => {
    for (const crd of CRDS) {
      const sample = (await import(join(fixtures, "samples", crd.sample))) as Record<
        string,
        { apiVersion: string; kind: string }
      >;
      const object = Object.entries(sample).find(([name]) => name !== "refused")?.[1];
      if (!object) throw new Error(`${crd.sample} exports no sample`);
      const created = await client.create(object);
      expect(created.metadata?.uid, crd.sample).toBeTruthy();
      const type = resourceType(object.apiVersion, object.kind);
      expect(
        (await client.get(type, created.metadata?.name ?? "", { namespace: "default" })).metadata?.uid,
      ).toBe(created.metadata?.uid);
    }
  });

  it("reads a CRD from a URL", async () => {
    const yaml = readFileSync(join(fixtures, CRDS[0]?.file ?? ""), "utf8");
    const server = createServer((request, response) => {
      if (request.url === "/crd.yaml") response.end(yaml);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const dir = cachedProjectDir("typegen-url");
      const fromFile = typesOf(dir, join(fixtures, CRDS[0]?.file ?? ""));
      const fromUrl = await runCliAsync(dir, ["generate", "types", `http://127.0.0.1:${port}/crd.yaml`]);
      expect(fromUrl.code, fromUrl.stderr).toBe(0);
      expect(body(fromUrl.stdout)).toBe(body(fromFile));
      const missing = await runCliAsync(dir, ["generate", "types", `http://127.0.0.1:${port}/none.yaml`]);
      expect(missing.stderr).toContain(`http://127.0.0.1:${port}/none.yaml: HTTP 404`);
    } finally {
      server.close();
    }
  });

  it("says what is wrong with a source it cannot read", () => {
    const dir = cachedProjectDir("typegen-errors");
    const missing = runCli(dir, ["generate", "types", "no-such-file.yaml"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no-such-file.yaml: no such file, and not a URL or a CRD name");
    writeFileSync(join(dir, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    const notCrd = runCli(dir, ["generate", "types", "cm.yaml"]);
    expect(notCrd.stderr).toContain("cm.yaml: no CustomResourceDefinition in it");
  });
});
