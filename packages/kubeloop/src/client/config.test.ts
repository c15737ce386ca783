import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { ConfigError } from "./errors.js";

const dir = mkdtempSync(join(tmpdir(), "kubeloop-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
  - { name: one, cluster: { server: "https://10.1.2.3:6443/" } }
  - { name: two, cluster: { server: "https://example.test:8443", insecure-skip-tls-verify: true } }
users:
  - { name: token-user, user: { token: abc123 } }
contexts:
  - { name: first, context: { cluster: one, user: token-user, namespace: team-a } }
  - { name: second, context: { cluster: two, user: token-user } }
current-context: first
`;

describe("loadConfig", () => {
  it("reads the current context: server, namespace and a bearer token", async () => {
    const config = await loadConfig({ kubeconfigText: kubeconfig });
    expect(config.server).toBe("https://10.1.2.3:6443");
    expect(config.namespace).toBe("team-a");
    expect(config.tls.rejectUnauthorized).toBe(true);
    expect(await config.authorization()).toBe("Bearer abc123");
  });

  it("switches to a named context, with kubectl's default namespace and its TLS setting", async () => {
    const config = await loadConfig({ kubeconfigText: kubeconfig, context: "second" });
    expect(config.server).toBe("https://example.test:8443");
    expect(config.namespace).toBe("default");
    expect(config.tls.rejectUnauthorized).toBe(false);
  });

  it("reads inline certificates, and leaves other users (here an exec plugin) to client-node", async () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const plugin = join(dir, "credential.sh");
    writeFileSync(
      plugin,
      `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'`,
    );
    const text = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443", certificate-authority-data: ${b64("CA")} } }]
users:
  - { name: certs, user: { client-certificate-data: ${b64("CERT")}, client-key-data: ${b64("KEY")} } }
  - { name: file, user: { exec: { apiVersion: client.authentication.k8s.io/v1, command: sh, args: [${plugin}] } } }
contexts: [{ name: certs, context: { cluster: c, user: certs } }, { name: file, context: { cluster: c, user: file } }]
current-context: certs
`;
    const certs = await loadConfig({ kubeconfigText: text });
    expect([certs.tls.ca, certs.tls.cert, certs.tls.key].map(String)).toEqual(["CA", "CERT", "KEY"]);
    expect(await certs.authorization()).toBeUndefined();
    const file = await loadConfig({ kubeconfigText: text, context: "file" });
    expect(String(file.tls.ca)).toBe("CA");
    expect(await file.authorization()).toBe("Bearer from-exec");
  });

  it("names the contexts it has when asked for one it does not", async () => {
    await expect(loadConfig({ kubeconfigText: kubeconfig, context: "third" })).rejects.toThrow(
      'Context "third" is not in kubeconfig text (it has: first, second)',
    );
  });

  it("says which file is missing", async () => {
    const error = await loadConfig({ kubeconfig: join(dir, "nope") }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(`kubeconfig ${join(dir, "nope")} does not exist`);
  });

  it("reports a file that is not a kubeconfig", async () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "clusters: [ this is : not yaml");
    await expect(loadConfig({ kubeconfig: bad })).rejects.toThrow(
      /^Could not read the Kubernetes configuration/,
    );
  });

  it("rejects a server address that is not a URL", async () => {
    const text = kubeconfig.replace("https://10.1.2.3:6443/", "not a url");
    await expect(loadConfig({ kubeconfigText: text })).rejects.toThrow(/invalid server address: "not a url"/);
  });
});
