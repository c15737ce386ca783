import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:tls";
import pino from "pino";
import { Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection, startPlane, stopPlane, until } from "../../test/helpers.js";
import { deployManifests, metricsReaderRole, metricsRoles } from "../cli/manifests.js";
import { Client } from "../client/client.js";
import type { KubeObject } from "../client/types.js";
import type { ControlPlane } from "../testing/control-plane.js";
import { selfSignedCertificate } from "../util/index.js";
import { Manager } from "./manager.js";
import { DENY_TTL_MS, MetricsAuthorizer } from "./metrics-auth.js";

// Secure metrics as controller-runtime serves them: HTTPS, the bearer token reviewed by the API
// (TokenReview), the user authorized for `get` on the non-resource URL /metrics (SubjectAccessReview).
const logger = pino({ level: "silent" });
const NAMESPACE = "monitoring";
const OPERATOR = "op";
let plane: ControlPlane;
let client: Client;
/** Skips verification: the manager's certificate is self-signed unless a folder is given. */
const insecure = new Agent({ connect: { rejectUnauthorized: false } });

async function tokenOf(serviceAccount: string): Promise<string> {
  await client.create({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: serviceAccount, namespace: NAMESPACE },
  });
  const { body } = await client.transport.request({
    method: "POST",
    path: `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${serviceAccount}/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  return (body as { status: { token: string } }).status.token;
}

/** The metrics-reader ClusterRole `kubeloop generate` writes (not bound there), bound to `serviceAccount`. */
async function grantMetricsReader(serviceAccount: string): Promise<void> {
  await client.create({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `metrics-reader-${serviceAccount}` },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: metricsReaderRole(OPERATOR),
    },
    subjects: [{ kind: "ServiceAccount", name: serviceAccount, namespace: NAMESPACE }],
  });
}

/**
 * A client authenticated as the operator's service account, with only what `kubeloop generate`
 * grants it for metrics: the metrics-auth ClusterRole, through the generated binding.
 */
async function operatorClient(): Promise<Client> {
  for (const role of metricsRoles(OPERATOR)) await client.apply(role as KubeObject, { fieldManager: "test" });
  const manifests = new Map(deployManifests({ name: OPERATOR, namespace: NAMESPACE, image: "unused" }));
  for (const binding of manifests.get("metrics-auth-binding.yaml") ?? [])
    await client.apply(binding as KubeObject, { fieldManager: "test" });
  return clientWithToken(await tokenOf(OPERATOR));
}

function clientWithToken(token: string): Promise<Client> {
  return Client.connect({
    kubeconfigText: JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "plane",
          cluster: {
            server: plane.server,
            "certificate-authority-data": Buffer.from(plane.caCert).toString("base64"),
          },
        },
      ],
      users: [{ name: OPERATOR, user: { token } }],
      contexts: [{ name: OPERATOR, context: { cluster: "plane", user: OPERATOR } }],
      "current-context": OPERATOR,
    }),
  });
}

function scrape(port: number, token?: string, dispatcher: Agent = insecure) {
  return fetch(`https://127.0.0.1:${port}/metrics`, {
    dispatcher,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });
}

/** The certificate a new TLS connection to `port` is served (its serial number). */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1", rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()?.serialNumber ?? "");
      socket.end();
    });
    socket.once("error", reject);
  });
}

function secureManager(options: { certDir?: string } = {}, as = client): Manager {
  return new Manager({
    client: as,
    logger,
    probes: false,
    metrics: { port: 0, host: "127.0.0.1", secure: true, ...options },
    handleSignals: false,
  });
}

beforeAll(async () => {
  ({ plane, client } = await startPlane());
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
});
afterAll(async () => {
  await insecure.close();
  await stopPlane(plane, client);
});

describe("secure metrics", () => {
  it("answers 401 without a token, 403 to a service account without the grant and 200 to one with it, under the generated RBAC", async () => {
    const stranger = await tokenOf("stranger");
    const prometheus = await tokenOf("prometheus");
    const operator = await operatorClient();
    await grantMetricsReader("prometheus");
    const manager = secureManager({}, operator);
    const running = manager.start();
    await manager.ready;
    const port = manager.ports.metrics as number;
    try {
      const anonymous = await scrape(port);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.text()).toMatch(/bearer token is required/);
      const bogus = await scrape(port, "not-a-token");
      expect(bogus.status).toBe(401);
      const denied = await scrape(port, stranger);
      expect(denied.status).toBe(403);
      expect(await denied.text()).toContain(
        'user "system:serviceaccount:monitoring:stranger" may not get /metrics',
      );
      const allowed = await scrape(port, prometheus);
      expect(allowed.status).toBe(200);
      const text = await allowed.text();
      expect(text).toMatch(/kubeloop_certificate_expiration_timestamp_seconds\{server="metrics"\} \d+/);
      // Node's own health: event-loop lag and heap.
      expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds \d/m);
      expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
      // Plain HTTP on the same port is not served.
      await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
    } finally {
      await manager.stop();
      await running;
      await operator.close();
    }
  });

  it("answers 500, saying why, when the manager may not ask the API (no metrics-auth binding)", async () => {
    const unbound = await clientWithToken(await tokenOf("unbound-operator"));
    const reader = await tokenOf("reader");
    await grantMetricsReader("reader");
    const manager = secureManager({}, unbound);
    const running = manager.start();
    try {
      await manager.ready;
      const failed = await scrape(manager.ports.metrics as number, reader);
      expect(failed.status).toBe(500);
      expect(await failed.text()).toMatch(/^TokenReview failed: .*tokenreviews.* is forbidden/);
    } finally {
      await manager.stop();
      await running;
      await unbound.close();
    }
  });

  it("keeps a denial for 30 s and an allowance for 5 min, as controller-runtime caches them", async () => {
    const late = await tokenOf("late");
    let now = 0;
    const authorizer = new MetricsAuthorizer(client, { now: () => now });
    const check = () => authorizer.check(`Bearer ${late}`, "GET", "/metrics");
    expect(await check()).toMatchObject({ allowed: false, status: 403 });
    await grantMetricsReader("late");
    // Once the API's authorizer has seen the grant (a fresh, uncached review says so) …
    const fresh = async () =>
      (await new MetricsAuthorizer(client).check(`Bearer ${late}`, "GET", "/metrics")).allowed;
    await until(fresh, 10_000, "the API to see the grant");
    // … the cached denial still holds for 30 s …
    now = DENY_TTL_MS - 1;
    expect(await check()).toMatchObject({ allowed: false, status: 403 });
    // … and then the grant is seen (the token's review, cached for a minute, is not repeated).
    now = DENY_TTL_MS;
    expect(await check()).toEqual({ allowed: true, user: "system:serviceaccount:monitoring:late" });
  });

  it("serves the certificate of a folder, reloads it when it changes, and names the path it cannot read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubeloop-metrics-certs-"));
    try {
      const missing = await rejection(secureManager({ certDir: dir }).start());
      expect(missing.message).toBe(
        `metrics certificate missing: ${join(dir, "tls.crt")} (mount the metrics serving certificate there, or unset METRICS_CERT_DIR for a self-signed one)`,
      );
      writeFileSync(join(dir, "tls.crt"), "not a certificate");
      writeFileSync(join(dir, "tls.key"), "not a key");
      const unreadable = await rejection(secureManager({ certDir: dir }).start());
      expect(unreadable.message).toContain(`metrics certificate unreadable: ${join(dir, "tls.crt")}`);

      const first = selfSignedCertificate(["127.0.0.1"]);
      writeFileSync(join(dir, "tls.crt"), first.cert);
      writeFileSync(join(dir, "tls.key"), first.key);
      const manager = new Manager({
        client,
        logger,
        probes: false,
        metrics: { port: 0, host: "127.0.0.1", secure: true, certDir: dir },
        handleSignals: false,
      });
      const running = manager.start();
      await manager.ready;
      const port = manager.ports.metrics as number;
      try {
        // Verified against the folder's certificate: a scraper with the CA needs no skip-verify.
        const verifying = new Agent({ connect: { ca: first.cert } });
        expect((await scrape(port, undefined, verifying)).status).toBe(401);
        await verifying.close();
        const firstSerial = await servedSerial(port);
        const second = selfSignedCertificate(["127.0.0.1"]);
        writeFileSync(join(dir, "tls.key"), second.key);
        writeFileSync(join(dir, "tls.crt"), second.cert);
        await until(async () => (await servedSerial(port)) !== firstSerial, 15_000, "the new certificate");
      } finally {
        await manager.stop();
        await running;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
