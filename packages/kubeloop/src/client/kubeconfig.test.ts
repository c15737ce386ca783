import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { rejection } from "../../test/helpers.js";
import { ConfigMap } from "../k8s/index.js";
import { ControlPlane } from "../testing/control-plane.js";
import { kubectl } from "../testing/kubectl.js";
import { startTunnelProxy, type TunnelProxy } from "../testing/servers/proxy.js";
import { Client } from "./client.js";
import { loadConfig } from "./config.js";
import { Unauthorized } from "./errors.js";
import { Transport } from "./transport.js";

/**
 * Every kubeconfig shape, given to kubectl and to kubeloop's client against the same API server:
 * both must be the same identity (`kubectl auth whoami` and a SelfSubjectReview), or both fail.
 */

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** What each row needs from the running plane. */
interface Ground {
  dir: string;
  server: string;
  port: string;
  ca: string;
  admin: { cert: string; key: string };
  alice: { cert: string; key: string };
  token: string;
  proxy: TunnelProxy;
  /** The same, demanding a username and password. */
  guardedProxy: TunnelProxy;
}

interface Row {
  name: string;
  /** Writes the row's files under `folder` and returns the KUBECONFIG value to use. */
  setup: (g: Ground, folder: string) => string;
  env?: (g: Ground) => Record<string, string>;
  /** The identity both must see; or `fails`: what kubeloop's error says (kubectl must fail too). */
  user?: string;
  groups?: string[];
  fails?: RegExp;
  /** Whether both clients must have gone through the proxy (true) or around it (false). */
  proxied?: boolean;
}

const SERVICE_ACCOUNT = "system:serviceaccount:default:robot";
const b64 = (text: string) => Buffer.from(text).toString("base64");
const PROXY_ENV = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"];

/** A one-context kubeconfig; `cluster` and `user` are the entries' fields. */
function kubeconfigDoc(cluster: Record<string, unknown>, user: Record<string, unknown>) {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "plane", cluster }],
    users: [{ name: "someone", user }],
    contexts: [{ name: "plane", context: { cluster: "plane", user: "someone" } }],
    "current-context": "plane",
  };
}

function write(path: string, text: string, mode = 0o600): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text, { mode });
  return path;
}

/** A kubeconfig in `folder` whose cluster is the plane, by its CA inline, at `server` (default: its URL). */
function simple(
  g: Ground,
  folder: string,
  user: Record<string, unknown>,
  cluster: Record<string, unknown> = {},
) {
  const doc = kubeconfigDoc({ server: g.server, "certificate-authority-data": b64(g.ca), ...cluster }, user);
  return write(join(folder, "kubeconfig"), stringify(doc));
}

/** A server name only the test proxy resolves (the serving certificate names it). */
const privateServer = (g: Ground) => `https://kubernetes.default.svc:${g.port}`;

const rows: Row[] = [
  {
    name: "client certificate inline",
    setup: (g, folder) =>
      simple(g, folder, {
        "client-certificate-data": b64(g.admin.cert),
        "client-key-data": b64(g.admin.key),
      }),
    user: "kubeloop-admin",
    groups: ["system:masters", "system:authenticated"],
  },
  {
    name: "client certificate and key files, relative to the kubeconfig, CA file too",
    setup: (g, folder) => {
      write(join(folder, "pki/alice.crt"), g.alice.cert);
      write(join(folder, "pki/alice.key"), g.alice.key);
      write(join(folder, "pki/ca.crt"), g.ca);
      const doc = kubeconfigDoc(
        { server: g.server, "certificate-authority": "pki/ca.crt" },
        { "client-certificate": "pki/alice.crt", "client-key": "./pki/alice.key" },
      );
      return write(join(folder, "kubeconfig"), stringify(doc));
    },
    user: "alice",
    groups: ["team-a", "system:authenticated"],
  },
  {
    name: "token inline",
    setup: (g, folder) => simple(g, folder, { token: g.token }),
    user: SERVICE_ACCOUNT,
  },
  {
    name: "tokenFile, relative to the kubeconfig",
    setup: (g, folder) => {
      write(join(folder, "secrets/token"), `${g.token}\n`);
      return simple(g, folder, { tokenFile: "secrets/token" });
    },
    user: SERVICE_ACCOUNT,
  },
  {
    name: "exec plugin: relative command, args, env, provideClusterInfo with the cluster's exec extension",
    setup: (g, folder) => {
      const tokenFile = write(join(folder, "token"), g.token);
      // Fails unless it got the cluster (with the extension's config), its env and its argument.
      write(
        join(folder, "bin/credential.sh"),
        [
          "#!/bin/sh",
          'case "$KUBERNETES_EXEC_INFO" in',
          `  *'"server":"${g.server}"'*'"config":{"audience":"kubeloop"}'*) ;;`,
          '  *) echo "no cluster info: $KUBERNETES_EXEC_INFO" >&2; exit 3 ;;',
          "esac",
          '[ "$1" = "--audience=kubeloop" ] || { echo "bad args: $*" >&2; exit 4; }',
          `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$(cat "$TOKEN_FILE")"`,
          "",
        ].join("\n"),
        0o700,
      );
      return simple(
        g,
        folder,
        {
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: "./bin/credential.sh",
            args: ["--audience=kubeloop"],
            env: [{ name: "TOKEN_FILE", value: tokenFile }],
            provideClusterInfo: true,
            interactiveMode: "Never",
          },
        },
        {
          extensions: [{ name: "client.authentication.k8s.io/exec", extension: { audience: "kubeloop" } }],
        },
      );
    },
    user: SERVICE_ACCOUNT,
  },
  {
    name: "exec plugin returning a client certificate and key",
    setup: (g, folder) => {
      const credential = {
        apiVersion: "client.authentication.k8s.io/v1beta1",
        kind: "ExecCredential",
        status: { clientCertificateData: g.alice.cert, clientKeyData: g.alice.key },
      };
      const output = write(join(folder, "credential.json"), JSON.stringify(credential));
      return simple(g, folder, {
        exec: { apiVersion: "client.authentication.k8s.io/v1beta1", command: "cat", args: [output] },
      });
    },
    user: "alice",
    groups: ["team-a", "system:authenticated"],
  },
  {
    name: "exec plugin that is not installed: the error shows installHint",
    setup: (g, folder) =>
      simple(g, folder, {
        exec: {
          apiVersion: "client.authentication.k8s.io/v1",
          command: "kubeloop-missing-credential-plugin",
          installHint: "Install it with: brew install kubeloop-missing-credential-plugin",
          interactiveMode: "Never",
        },
      }),
    fails:
      /kubeloop-missing-credential-plugin not found[\s\S]*brew install kubeloop-missing-credential-plugin/,
  },
  {
    name: "impersonation: as, as-uid, as-groups, as-user-extra",
    setup: (g, folder) =>
      simple(g, folder, {
        "client-certificate-data": b64(g.admin.cert),
        "client-key-data": b64(g.admin.key),
        as: "bob",
        "as-uid": "1234",
        "as-groups": ["devs", "ops"],
        "as-user-extra": { scopes: ["read", "write"], "example.com/team": ["blue"] },
      }),
    user: "bob",
    groups: ["devs", "ops", "system:authenticated"],
  },
  {
    name: "KUBECONFIG merging two files: first definition wins, paths relative to each file",
    setup: (g, folder) => {
      write(join(folder, "second/pki/alice.crt"), g.alice.cert);
      write(join(folder, "second/pki/alice.key"), g.alice.key);
      const first = {
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "plane", cluster: { server: g.server, "certificate-authority-data": b64(g.ca) } }],
        contexts: [{ name: "merged", context: { cluster: "plane", user: "alice" } }],
        "current-context": "merged",
      };
      const second = {
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "plane", cluster: { server: "https://127.0.0.1:1" } }],
        users: [
          { name: "alice", user: { "client-certificate": "pki/alice.crt", "client-key": "pki/alice.key" } },
        ],
        contexts: [{ name: "merged", context: { cluster: "plane", user: "nobody" } }],
        "current-context": "other",
      };
      const a = write(join(folder, "first/kubeconfig"), stringify(first));
      const b = write(join(folder, "second/kubeconfig"), stringify(second));
      return `${a}:${join(folder, "absent")}:${b}`;
    },
    user: "alice",
    groups: ["team-a", "system:authenticated"],
  },
  {
    name: "tls-server-name: the server is verified by that name",
    setup: (g, folder) => simple(g, folder, { token: g.token }, { "tls-server-name": "kubernetes.default" }),
    user: SERVICE_ACCOUNT,
  },
  {
    name: "tls-server-name the certificate does not name: refused",
    setup: (g, folder) => simple(g, folder, { token: g.token }, { "tls-server-name": "wrong.example" }),
    fails: /wrong\.example/,
  },
  {
    name: "disable-compression",
    setup: (g, folder) => simple(g, folder, { token: g.token }, { "disable-compression": true }),
    user: SERVICE_ACCOUNT,
  },
  {
    name: "proxy-url http: a server only the proxy can reach",
    setup: (g, folder) =>
      simple(g, folder, { token: g.token }, { server: privateServer(g), "proxy-url": g.proxy.httpUrl }),
    user: SERVICE_ACCOUNT,
    proxied: true,
  },
  {
    name: "proxy-url socks5: a server only the proxy can reach",
    setup: (g, folder) =>
      simple(g, folder, { token: g.token }, { server: privateServer(g), "proxy-url": g.proxy.socks5Url }),
    user: SERVICE_ACCOUNT,
    proxied: true,
  },
  {
    name: "proxy-url with tls-server-name: a name only the proxy knows, verified by tls-server-name",
    setup: (g, folder) =>
      simple(
        g,
        folder,
        { token: g.token },
        {
          server: `https://api.internal:${g.port}`,
          "proxy-url": g.proxy.httpUrl,
          "tls-server-name": "kubernetes.default",
        },
      ),
    user: SERVICE_ACCOUNT,
    proxied: true,
  },
  {
    name: "proxy-url to a name the certificate does not have, without tls-server-name: refused",
    setup: (g, folder) =>
      simple(
        g,
        folder,
        { token: g.token },
        { server: `https://api.internal:${g.port}`, "proxy-url": g.proxy.socks5Url },
      ),
    fails: /api\.internal/,
  },
  {
    name: "proxy-url http with a username and password in it",
    setup: (g, folder) =>
      simple(
        g,
        folder,
        { token: g.token },
        { server: privateServer(g), "proxy-url": g.guardedProxy.httpUrl },
      ),
    user: SERVICE_ACCOUNT,
    proxied: true,
  },
  {
    name: "proxy-url socks5 with a username and password in it",
    setup: (g, folder) =>
      simple(
        g,
        folder,
        { token: g.token },
        { server: privateServer(g), "proxy-url": g.guardedProxy.socks5Url },
      ),
    user: SERVICE_ACCOUNT,
    proxied: true,
  },
  {
    name: "proxy-url without the credentials the proxy demands: refused",
    setup: (g, folder) =>
      simple(
        g,
        folder,
        { token: g.token },
        { server: privateServer(g), "proxy-url": `http://127.0.0.1:${g.guardedProxy.port}` },
      ),
    fails: /407/,
    proxied: false,
  },
  {
    name: "HTTPS_PROXY from the environment",
    setup: (g, folder) => simple(g, folder, { token: g.token }, { server: privateServer(g) }),
    env: (g) => ({ HTTPS_PROXY: g.proxy.httpUrl }),
    user: SERVICE_ACCOUNT,
    proxied: true,
  },
  {
    name: "HTTPS_PROXY with a NO_PROXY domain: no proxy, so the private name is not found",
    setup: (g, folder) => simple(g, folder, { token: g.token }, { server: privateServer(g) }),
    env: (g) => ({ HTTPS_PROXY: g.proxy.httpUrl, NO_PROXY: "example.com,.svc" }),
    fails: /kubernetes\.default\.svc/,
    proxied: false,
  },
  {
    name: "HTTPS_PROXY with a loopback server: direct, as Go does",
    setup: (g, folder) => simple(g, folder, { token: g.token }),
    env: (g) => ({ HTTPS_PROXY: g.proxy.httpUrl }),
    user: SERVICE_ACCOUNT,
    proxied: false,
  },
];

let plane: ControlPlane;
let admin: Client;
let ground: Ground;
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  for (const name of [...PROXY_ENV, "KUBECONFIG"]) {
    saved[name] = process.env[name];
    delete process.env[name];
  }
  plane = await new ControlPlane().start();
  admin = await Client.connect({ kubeconfig: plane.kubeconfigPath });
  const userOf = (text: string) => {
    const user = parse(text).users[0].user;
    const pem = (value: string) => Buffer.from(value, "base64").toString("utf8");
    return { cert: pem(user["client-certificate-data"]), key: pem(user["client-key-data"]) };
  };
  const alice = plane.addUser("alice", ["team-a"]);
  const hosts = { "kubernetes.default.svc": "127.0.0.1", "api.internal": "127.0.0.1" };
  await admin.create({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "robot", namespace: "default" },
  });
  const minted = await admin.transport.request({
    method: "POST",
    path: "/api/v1/namespaces/default/serviceaccounts/robot/token",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  ground = {
    dir: mkdtempSync(join(tmpdir(), "kubeloop-kubeconfigs-")),
    server: plane.server,
    port: new URL(plane.server).port,
    ca: plane.caCert,
    admin: userOf(plane.kubeconfig),
    alice: userOf(readFileSync(alice.kubeconfigPath, "utf8")),
    token: (minted.body as { status: { token: string } }).status.token,
    proxy: await startTunnelProxy({ hosts }),
    guardedProxy: await startTunnelProxy({ hosts, auth: { username: "ops", password: "s3cret:/@" } }),
  };
});
afterAll(async () => {
  await ground?.proxy.close();
  await ground?.guardedProxy.close();
  if (ground) rmSync(ground.dir, { recursive: true, force: true });
  await admin?.close();
  await plane?.stop();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** The server a one-file kubeconfig names. */
function readConfigServer(path: string): string {
  return parse(readFileSync(path, "utf8")).clusters[0].cluster.server;
}

/** kubeloop's client as the kubeconfig's user: the SelfSubjectReview's userInfo, or the error. */
async function kubeloopWhoami(): Promise<UserInfo> {
  const transport = new Transport(await loadConfig());
  try {
    const review = await transport.request({
      method: "POST",
      path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    return (review.body as { status: { userInfo: UserInfo } }).status.userInfo;
  } finally {
    await transport.close();
  }
}

describe("kubeconfig shapes: kubectl and kubeloop's client are the same identity", () => {
  it.each(rows)("$name", async (row) => {
    const folder = join(ground.dir, row.name.replace(/\W+/g, "-"));
    const kubeconfig = row.setup(ground, folder);
    const env = row.env?.(ground) ?? {};
    Object.assign(process.env, env, { KUBECONFIG: kubeconfig });
    const proxies = [ground.proxy, ground.guardedProxy];
    const tunnels = () => proxies.reduce((sum, proxy) => sum + proxy.tunnels.length, 0);
    const opened = proxies.map((proxy) => proxy.tunnels.length);
    try {
      const before = tunnels();
      const viaKubectl = await kubectl(["auth", "whoami", "-o", "json"], { kubeconfig });
      const afterKubectl = tunnels();
      const viaKubeloop = await kubeloopWhoami().catch((error: Error) => error);
      const afterKubeloop = tunnels();
      if (row.fails) {
        expect(viaKubectl.code, viaKubectl.stdout).not.toBe(0);
        expect(viaKubeloop).toBeInstanceOf(Error);
        expect((viaKubeloop as Error).message).toMatch(row.fails);
      } else {
        expect(viaKubectl.code, viaKubectl.stderr).toBe(0);
        if (viaKubeloop instanceof Error) throw viaKubeloop;
        const kubectlUser = (JSON.parse(viaKubectl.stdout) as { status: { userInfo: UserInfo } }).status
          .userInfo;
        expect(viaKubeloop).toEqual(kubectlUser);
        expect(viaKubeloop.username).toBe(row.user);
        if (row.groups) expect(viaKubeloop.groups).toEqual(row.groups);
      }
      if (row.proxied === true) {
        expect(afterKubectl, "kubectl went through the proxy").toBeGreaterThan(before);
        expect(afterKubeloop, "kubeloop went through the proxy").toBeGreaterThan(afterKubectl);
        const destinations = proxies.flatMap((proxy, i) => proxy.tunnels.slice(opened[i]));
        expect(new Set(destinations)).toEqual(
          new Set([`${new URL(readConfigServer(kubeconfig)).hostname}:${ground.port}`]),
        );
      }
      if (row.proxied === false) expect(afterKubeloop).toBe(before);
    } finally {
      for (const name of [...Object.keys(env), "KUBECONFIG"]) delete process.env[name];
    }
  });

  it("the impersonated user's uid and extra reach the server", async () => {
    const folder = join(ground.dir, "impersonation-details");
    process.env.KUBECONFIG = rows.find((r) => r.name.startsWith("impersonation"))?.setup(ground, folder);
    try {
      const user = await kubeloopWhoami();
      expect(user.uid).toBe("1234");
      expect(user.extra).toEqual({ scopes: ["read", "write"], "example.com/team": ["blue"] });
    } finally {
      delete process.env.KUBECONFIG;
    }
  });

  it("an exec credential the server refuses (401) is fetched again for the next request", async () => {
    const folder = join(ground.dir, "exec-refused");
    const runs = write(join(folder, "runs"), "");
    const tokenFile = write(join(folder, "token"), ground.token);
    // The first run prints a token the server does not know; later runs the real one.
    const plugin = write(
      join(folder, "plugin.sh"),
      `echo run >> ${runs}\n` +
        `if [ "$(wc -l < ${runs})" -eq 1 ]; then token=stale; else token=$(cat ${tokenFile}); fi\n` +
        `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$token"\n`,
    );
    process.env.KUBECONFIG = simple(ground, folder, {
      exec: {
        apiVersion: "client.authentication.k8s.io/v1",
        command: "sh",
        args: [plugin],
        interactiveMode: "Never",
      },
    });
    try {
      const client = new Client(await loadConfig());
      try {
        const refused = await rejection(
          client.get({ type: ConfigMap, namespace: "default", name: "kube-root-ca.crt" }),
        );
        expect(refused).toBeInstanceOf(Unauthorized);
        const user = await client.transport.request({
          method: "POST",
          path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
          body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
        });
        expect((user.body as { status: { userInfo: UserInfo } }).status.userInfo.username).toBe(
          SERVICE_ACCOUNT,
        );
        expect(readFileSync(runs, "utf8").trim().split("\n")).toHaveLength(2);
      } finally {
        await client.close();
      }
    } finally {
      delete process.env.KUBECONFIG;
    }
  });

  it("a user with only fields client-go does not read is refused, not anonymous", async () => {
    const folder = join(ground.dir, "unknown-fields");
    process.env.KUBECONFIG = simple(ground, folder, { "token-file": join(folder, "token") });
    try {
      await expect(loadConfig()).rejects.toThrow(/token-file.*rather than connect as system:anonymous/);
    } finally {
      delete process.env.KUBECONFIG;
    }
  });
});
