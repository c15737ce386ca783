import { createPrivateKey, X509Certificate } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { Agent, request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import {
  CertificateAuthority,
  CLOCK_SKEW_MS,
  DEFAULT_LEAF_VALIDITY_MS,
  selfSignedCertificate,
  serialHex,
} from "./pki.js";

const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

describe("CertificateAuthority", () => {
  const ca = CertificateAuthority.create("test-ca");
  const caCert = new X509Certificate(ca.cert);

  it("is a self-signed CA that may sign leaves only", () => {
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toBe("CN=test-ca");
    expect(caCert.checkIssued(caCert)).toBe(true);
    expect(caCert.verify(caCert.publicKey)).toBe(true);
    expect(caCert.toLegacyObject().ext_key_usage).toBeUndefined();
    expect(caCert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  it("issues a serving certificate for DNS names and IPv4/IPv6 addresses, chained to the CA", () => {
    const serving = ca.issueServing({
      commonName: "api",
      dnsNames: ["localhost", "webhook.system.svc", "*.apps.example.com"],
      ipAddresses: ["127.0.0.1", "::1"],
    });
    const cert = new X509Certificate(serving.cert);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkHost("webhook.system.svc")).toBe("webhook.system.svc");
    expect(cert.checkHost("shop.apps.example.com")).toBe("*.apps.example.com");
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(cert.checkIP("::1")).toBe("::1");
    expect(cert.checkHost("example.com")).toBeUndefined();
    expect(cert.keyUsage).toEqual([SERVER_AUTH]);
    expect(cert.checkPrivateKey(createPrivateKey(serving.key))).toBe(true);
    expect(serving.key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  it("back-dates for clock skew and ends a year on by default, never after the CA", () => {
    const before = Date.now();
    const cert = new X509Certificate(
      ca.issueServing({ commonName: "a", dnsNames: ["a"], ipAddresses: [] }).cert,
    );
    const after = Date.now();
    // X.509 times have whole seconds.
    expect(cert.validFromDate.getTime()).toBeGreaterThanOrEqual(
      Math.floor((before - CLOCK_SKEW_MS) / 1000) * 1000,
    );
    expect(cert.validFromDate.getTime()).toBeLessThanOrEqual(after - CLOCK_SKEW_MS);
    expect(cert.validToDate.getTime()).toBeLessThanOrEqual(after + DEFAULT_LEAF_VALIDITY_MS);
    expect(cert.validToDate.getTime()).toBeGreaterThan(before + DEFAULT_LEAF_VALIDITY_MS - 1000);

    const shortCa = CertificateAuthority.create("short", { validityMs: 3_600_000 });
    const capped = new X509Certificate(
      shortCa.issueServing({ commonName: "b", dnsNames: ["b"], ipAddresses: [] }).cert,
    );
    expect(capped.validToDate.getTime()).toBe(new X509Certificate(shortCa.cert).validToDate.getTime());
  });

  it("issues client certificates whose subject carries the user and groups", () => {
    const client = ca.issueClient({ user: "jane", groups: ["system:masters", "devs"] });
    const cert = new X509Certificate(client.cert);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.subject.split("\n")).toEqual(["CN=jane", "O=system:masters", "O=devs"]);
    expect(cert.keyUsage).toEqual([CLIENT_AUTH]);
  });

  it("gives every certificate a distinct random serial", () => {
    const serials = Array.from(
      { length: 4 },
      () => new X509Certificate(ca.issueClient({ user: "u" }).cert).serialNumber,
    );
    expect(new Set(serials).size).toBe(4);
    for (const serial of serials) expect(serial.length).toBeGreaterThanOrEqual(16); // 64 bits or more
  });

  it("writes a serial as a positive, minimal DER integer (what Go's parser insists on)", () => {
    expect(serialHex(Buffer.from("7f00", "hex"))).toBe("7f00");
    expect(serialHex(Buffer.from("80ff", "hex"))).toBe("0080ff"); // top bit: a zero byte in front
    expect(serialHex(Buffer.from("0005", "hex"))).toBe("05"); // no leading zero bytes
    expect(serialHex(Buffer.from("00000081", "hex"))).toBe("0081");
    expect(serialHex(Buffer.alloc(16))).toBe("01"); // never zero
  });

  it("comes back from its PEM certificate and key, and signs what the old one's clients trust", () => {
    const again = CertificateAuthority.fromPem(ca.cert, ca.privateKeyPem());
    const cert = new X509Certificate(
      again.issueServing({ commonName: "x", dnsNames: ["x"], ipAddresses: [] }).cert,
    );
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
  });

  it("refuses what it cannot sign for, naming what is wrong", () => {
    const other = CertificateAuthority.create("other");
    const leaf = ca.issueServing({ commonName: "leaf", dnsNames: ["leaf"], ipAddresses: [] });
    expect(() => CertificateAuthority.fromPem(ca.cert, other.privateKeyPem())).toThrow(
      "the private key given is not the key of CA certificate CN=test-ca",
    );
    expect(() => CertificateAuthority.fromPem(leaf.cert, leaf.key)).toThrow(
      "certificate CN=leaf is not a CA",
    );
    expect(() => CertificateAuthority.fromPem("nonsense", leaf.key)).toThrow("CA certificate unreadable");
    expect(() => ca.issueServing({ commonName: "s", dnsNames: ["Bad_Name"], ipAddresses: [] })).toThrow(
      'not a DNS name: "Bad_Name"',
    );
    expect(() => ca.issueServing({ commonName: "s", dnsNames: [], ipAddresses: ["localhost"] })).toThrow(
      'not an IP address: "localhost" (put host names in dnsNames)',
    );
    expect(() => ca.issueServing({ commonName: "s", dnsNames: [], ipAddresses: [] })).toThrow(
      "needs at least one DNS name or IP address",
    );
    expect(() => ca.issueClient({ user: "u" }, { validityMs: 0 })).toThrow(
      "validityMs must be a finite number",
    );
  });
});

describe("a TLS server with a minted certificate", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.close();
    server = undefined;
  });

  async function serve(cert: { cert: string; key: string }): Promise<number> {
    server = createServer(cert, (_req, res) => res.end("ok"));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return (server.address() as AddressInfo).port;
  }

  const get = async (port: number, host: string, trusted: string) => {
    const dispatcher = new Agent({ connect: { ca: trusted, servername: host } });
    try {
      const response = await request(`https://127.0.0.1:${port}/`, { dispatcher });
      return await response.body.text();
    } finally {
      await dispatcher.close();
    }
  };

  it("is accepted by a client that trusts only the CA, for its names, and refused otherwise", async () => {
    const ca = CertificateAuthority.create("tls-ca");
    const port = await serve(
      ca.issueServing({ commonName: "svc", dnsNames: ["webhook.svc"], ipAddresses: [] }),
    );
    expect(await get(port, "webhook.svc", ca.cert)).toBe("ok");
    await expect(get(port, "other.svc", ca.cert)).rejects.toThrow(/altnames|Hostname/);
    await expect(get(port, "webhook.svc", CertificateAuthority.create("stranger").cert)).rejects.toThrow(
      /unable to verify|self.signed|certificate/,
    );
  });

  it("self-signed: accepted by a client that pins that certificate", async () => {
    const pinned = selfSignedCertificate(["localhost", "127.0.0.1"]);
    const cert = new X509Certificate(pinned.cert);
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    const port = await serve(pinned);
    expect(await get(port, "localhost", pinned.cert)).toBe("ok");
  });
});
