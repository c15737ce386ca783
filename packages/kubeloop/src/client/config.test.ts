import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { ConfigError } from "./errors.js";
import { ExecCredentials } from "./exec-credential.js";
import { proxyFromEnvironment } from "./proxy.js";

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

  it("reads inline certificates, and runs an exec plugin for its token", async () => {
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
  - { name: file, user: { exec: { apiVersion: client.authentication.k8s.io/v1, command: sh, args: [${plugin}], interactiveMode: Never } } }
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

/** A one-context kubeconfig text with these cluster and user fields. */
function shaped(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://10.1.2.3:6443", ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  });
}

describe("loadConfig: every field client-go reads", () => {
  it("carries proxy-url, tls-server-name and impersonation into the configuration", async () => {
    const config = await loadConfig({
      kubeconfigText: shaped(
        {
          "proxy-url": "socks5://bastion:1080",
          "tls-server-name": "api.internal",
          "disable-compression": true,
        },
        {
          token: "t",
          as: "bob",
          "as-uid": "7",
          "as-groups": ["g1", "g2"],
          "as-user-extra": { scopes: ["a"] },
        },
      ),
    });
    expect(config.proxy).toBe("socks5://bastion:1080");
    expect(config.tls.servername).toBe("api.internal");
    expect(config.impersonate).toEqual({
      user: "bob",
      uid: "7",
      groups: ["g1", "g2"],
      extra: { scopes: ["a"] },
    });
  });

  it("takes HTTPS_PROXY when the kubeconfig has no proxy-url, and the kubeconfig's when it has one", async () => {
    process.env.HTTPS_PROXY = "corporate:3128";
    try {
      expect((await loadConfig({ kubeconfigText: shaped({}, { token: "t" }) })).proxy).toBe(
        "http://corporate:3128",
      );
      const own = shaped({ "proxy-url": "http://bastion:8080" }, { token: "t" });
      expect((await loadConfig({ kubeconfigText: own })).proxy).toBe("http://bastion:8080");
    } finally {
      delete process.env.HTTPS_PROXY;
    }
  });

  it("reads tokenFile relative to the kubeconfig's folder, and names the file it cannot read", async () => {
    const folder = join(dir, "token-file");
    mkdirSync(join(folder, "secrets"), { recursive: true });
    writeFileSync(join(folder, "secrets/token"), "from-file\n");
    writeFileSync(join(folder, "kubeconfig"), shaped({}, { tokenFile: "secrets/token" }));
    const config = await loadConfig({ kubeconfig: join(folder, "kubeconfig") });
    expect(await config.authorization()).toBe("Bearer from-file");
    writeFileSync(join(folder, "broken"), shaped({}, { tokenFile: "secrets/missing" }));
    await expect(loadConfig({ kubeconfig: join(folder, "broken") })).rejects.toThrow(
      `tokenFile ${join(folder, "secrets/missing")} cannot be read`,
    );
  });

  it.each([
    [{}, { "token-file": "/t" }, /only fields client-go does not read either \(token-file\)/],
    [{}, { token: "t", "as-groups": ["g"] }, /as-groups or as-user-extra without `as`/],
    [{}, { "auth-provider": { name: "gcp" } }, /gke-gcloud-auth-plugin/],
    [{}, { "auth-provider": { name: "custom" } }, /no auth provider named "custom"/],
    [
      {},
      { "client-certificate": "/c", "client-certificate-data": "Yw==", "client-key-data": "aw==" },
      /both/,
    ],
    [{}, { "client-certificate-data": "Yw==" }, /certificate without a key/],
    [{}, { token: "t", username: "u", password: "p" }, /more than one way to authenticate/],
    [
      {},
      { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "x", interactiveMode: "Always" } },
      /terminal/,
    ],
    [{}, { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "x" } }, /needs interactiveMode/],
    [
      {},
      { exec: { apiVersion: "client.authentication.k8s.io/v1alpha1", command: "x" } },
      /apiVersion must be/,
    ],
    [{ "proxy-url": "ftp://p:21" }, { token: "t" }, /scheme must be http, https or socks5/],
    [
      { "insecure-skip-tls-verify": true, "certificate-authority-data": "Yw==" },
      { token: "t" },
      /remove one/,
    ],
  ])("refuses %j / %j with a clear error", async (cluster, user, message) => {
    const error = await loadConfig({ kubeconfigText: shaped(cluster, user) }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });

  it("sends basic auth from username and password, as client-go does", async () => {
    const config = await loadConfig({ kubeconfigText: shaped({}, { username: "u", password: "p" }) });
    expect(await config.authorization()).toBe(`Basic ${Buffer.from("u:p").toString("base64")}`);
  });
});

describe("exec credentials", () => {
  /** A plugin printing token-1, token-2, … (one per run), expiring at `expiry` if given. */
  function counting(name: string, expiry?: string) {
    const counter = join(dir, `${name}.count`);
    const script = join(dir, `${name}.sh`);
    writeFileSync(counter, "0");
    const status = expiry ? `"token":"token-%s","expirationTimestamp":"${expiry}"` : `"token":"token-%s"`;
    writeFileSync(
      script,
      `n=$(( $(cat ${counter}) + 1 )); echo $n > ${counter}\n` +
        `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{${status}}}' $n\n`,
    );
    return new ExecCredentials({
      user: name,
      command: "sh",
      args: [script],
      env: {},
      apiVersion: "client.authentication.k8s.io/v1",
    });
  }

  it("keeps a credential without expiry until the server refuses it, and shares a run", async () => {
    const plugin = counting("forever");
    const [a, b] = await Promise.all([plugin.get(), plugin.get()]);
    expect([a.token, b.token]).toEqual(["token-1", "token-1"]);
    expect((await plugin.get()).token).toBe("token-1");
    plugin.invalidate();
    expect((await plugin.get()).token).toBe("token-2");
  });

  it("runs the plugin again once the credential expired", async () => {
    const plugin = counting("expired", "2000-01-01T00:00:00Z");
    expect((await plugin.get()).token).toBe("token-1");
    expect((await plugin.get()).token).toBe("token-2");
  });
});

describe("proxyFromEnvironment (Go's http.ProxyFromEnvironment)", () => {
  const proxy = "http://proxy:3128";
  it.each([
    ["https://api.example.com", {}, undefined],
    ["https://api.example.com", { HTTPS_PROXY: proxy }, proxy],
    ["https://api.example.com", { https_proxy: proxy }, proxy],
    ["https://api.example.com", { HTTP_PROXY: proxy }, undefined], // http's proxy is not https's
    ["http://api.example.com", { HTTP_PROXY: proxy }, proxy],
    ["https://api.example.com", { HTTPS_PROXY: "proxy:3128" }, proxy], // no scheme: http
    ["https://api.example.com", { HTTPS_PROXY: "socks5://proxy:1080" }, "socks5://proxy:1080"],
    ["https://127.0.0.1:6443", { HTTPS_PROXY: proxy }, undefined], // loopback: never
    ["https://localhost:6443", { HTTPS_PROXY: proxy }, undefined],
    ["https://[::1]:6443", { HTTPS_PROXY: proxy }, undefined],
    ["https://api.example.com", { HTTPS_PROXY: proxy, NO_PROXY: "*" }, undefined],
    ["https://api.example.com", { HTTPS_PROXY: proxy, NO_PROXY: "example.com" }, undefined], // subdomains too
    ["https://example.com", { HTTPS_PROXY: proxy, NO_PROXY: "example.com" }, undefined],
    ["https://example.com", { HTTPS_PROXY: proxy, NO_PROXY: ".example.com" }, proxy], // only subdomains
    ["https://api.example.com", { HTTPS_PROXY: proxy, NO_PROXY: "*.example.com" }, undefined],
    ["https://notexample.com", { HTTPS_PROXY: proxy, NO_PROXY: "example.com" }, proxy],
    ["https://api.example.com:6443", { HTTPS_PROXY: proxy, NO_PROXY: "api.example.com:443" }, proxy],
    ["https://api.example.com:6443", { HTTPS_PROXY: proxy, no_proxy: "api.example.com:6443" }, undefined],
    ["https://10.1.2.3:6443", { HTTPS_PROXY: proxy, NO_PROXY: "10.0.0.0/8" }, undefined],
    ["https://11.1.2.3:6443", { HTTPS_PROXY: proxy, NO_PROXY: "10.0.0.0/8" }, proxy],
    ["https://10.1.2.3:6443", { HTTPS_PROXY: proxy, NO_PROXY: "10.1.2.3" }, undefined],
    ["https://[fd00::1]:6443", { HTTPS_PROXY: proxy, NO_PROXY: "fd00::/8" }, undefined],
    ["https://10.1.2.3", { HTTPS_PROXY: proxy, NO_PROXY: "example.com" }, proxy], // domains never match IPs
  ])("%s with %j → %s", (server, env, expected) => {
    expect(proxyFromEnvironment(server, env as NodeJS.ProcessEnv)).toBe(expected);
  });
});
