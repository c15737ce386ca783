import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CertificateAuthority } from "./pki.js";

describe("CertificateAuthority", () => {
  const ca = CertificateAuthority.create("test-ca");
  const caCert = new X509Certificate(ca.cert);

  it("is a self-signed CA", () => {
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toBe("CN=test-ca");
    expect(caCert.verify(caCert.publicKey)).toBe(true);
  });

  it("issues serving certificates with the requested names, signed by the CA", () => {
    const serving = ca.issueServing({
      commonName: "api",
      dnsNames: ["localhost", "kubernetes"],
      ipAddresses: ["127.0.0.1"],
    });
    const cert = new X509Certificate(serving.cert);
    expect(cert.ca).toBe(false);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkHost("kubernetes")).toBe("kubernetes");
    expect(cert.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(cert.checkHost("example.com")).toBeUndefined();
    expect(cert.keyUsage).toContain("1.3.6.1.5.5.7.3.1"); // serverAuth
  });

  it("issues client certificates whose subject carries the user and groups", () => {
    const client = ca.issueClient({ user: "jane", groups: ["system:masters", "devs"] });
    const cert = new X509Certificate(client.cert);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.subject.split("\n")).toEqual(["CN=jane", "O=system:masters", "O=devs"]);
    expect(cert.keyUsage).toContain("1.3.6.1.5.5.7.3.2"); // clientAuth
    expect(client.key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  it("gives every certificate a distinct serial", () => {
    const serials = new Set(
      Array.from({ length: 5 }, () => new X509Certificate(ca.issueClient({ user: "u" }).cert).serialNumber),
    );
    expect(serials.size).toBe(5);
  });
});
