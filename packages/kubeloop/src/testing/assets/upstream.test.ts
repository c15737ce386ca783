import { describe, expect, it } from "vitest";
import { artifactsFor, checksumFrom, hostArch, mirrored } from "./upstream.js";
import { componentsFor, KUBERNETES_VERSION } from "./versions.js";

// The recorded upstream URL patterns, for both architectures, and the checksum file formats.

const specs = componentsFor(KUBERNETES_VERSION);
const urls = (name: keyof typeof specs, arch: "amd64" | "arm64") =>
  (artifactsFor(specs[name], arch) ?? []).map((a) =>
    a.kind === "file" ? `${a.url} ${a.checksumUrl}` : `${a.repository}:${a.tag}`,
  );

describe("upstream release files", () => {
  it("names each file and its checksum for amd64 and arm64", () => {
    for (const arch of ["amd64", "arm64"] as const) {
      expect(urls("kubernetes", arch)).toContain(
        `https://dl.k8s.io/release/v${KUBERNETES_VERSION}/bin/linux/${arch}/kube-apiserver https://dl.k8s.io/release/v${KUBERNETES_VERSION}/bin/linux/${arch}/kube-apiserver.sha256`,
      );
      expect(urls("etcd", arch)).toEqual([
        `https://github.com/etcd-io/etcd/releases/download/v${specs.etcd.version}/etcd-v${specs.etcd.version}-linux-${arch}.tar.gz https://github.com/etcd-io/etcd/releases/download/v${specs.etcd.version}/SHA256SUMS`,
      ]);
      expect(urls("runc", arch)[0]).toMatch(new RegExp(`/runc\\.${arch} .*/runc\\.sha256sum$`));
      expect(urls("cni-plugins", arch)[0]).toMatch(
        new RegExp(`cni-plugins-linux-${arch}-v[\\d.]+\\.tgz .*\\.tgz\\.sha256$`),
      );
      expect(urls("containerd", arch)[0]).toMatch(
        new RegExp(`containerd-[\\d.]+-linux-${arch}\\.tar\\.gz .*\\.tar\\.gz\\.sha256sum$`),
      );
      expect(urls("coredns", arch)[0]).toMatch(
        new RegExp(`coredns_[\\d.]+_linux_${arch}\\.tgz .*\\.tgz\\.sha256$`),
      );
      expect(urls("registry", arch)[0]).toMatch(
        new RegExp(`registry_[\\d.]+_linux_${arch}\\.tar\\.gz .*\\.tar\\.gz\\.sha256$`),
      );
      expect(urls("helm", arch)[0]).toMatch(
        new RegExp(`^https://get\\.helm\\.sh/helm-v[\\d.]+-linux-${arch}\\.tar\\.gz .*\\.sha256sum$`),
      );
      expect(urls("kubernetes-node", arch)).toContain("https://registry.k8s.io/v2/pause:3.10.2");
    }
    const kwok = `https://github.com/kubernetes-sigs/kwok/releases/download/v${specs.kwok.version}`;
    const release = `https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v${specs.kwok.version}`;
    expect(urls("kwok", "arm64")).toEqual([
      `${kwok}/kwok-linux-arm64 ${release}`,
      `${kwok}/stage-fast.yaml ${release}`,
    ]);
    // No checked binary upstream: these keep their Go build.
    for (const name of ["olm", "olm-lifecycle"] as const)
      expect(artifactsFor(specs[name], "amd64")).toBeUndefined();
  });

  it("reads the three checksum formats, and says what a checksum file lacks", () => {
    const hash = "a".repeat(64);
    expect(checksumFrom(`${hash}\n`, "kubelet", "hex", "u")).toBe(hash);
    expect(checksumFrom(`${hash}  helm.tar.gz\n`, "helm.tar.gz", "sums", "u")).toBe(hash);
    const sums = `${"b".repeat(64)}  runc.arm64\n${hash}  runc.amd64\n${"c".repeat(64)}  runc.tar.xz\n`;
    expect(checksumFrom(sums, "runc.amd64", "sums", "u")).toBe(hash);
    expect(() => checksumFrom(sums, "runc.s390x", "sums", "https://x/runc.sha256sum")).toThrow(
      "https://x/runc.sha256sum has no checksum for runc.s390x",
    );
    expect(() => checksumFrom("<html>", "etcd.tar.gz", "hex", "u")).toThrow(
      "u has no checksum for etcd.tar.gz",
    );
    const release = JSON.stringify({ assets: [{ name: "kwok-linux-amd64", digest: `sha256:${hash}` }] });
    expect(checksumFrom(release, "kwok-linux-amd64", "github", "u")).toBe(hash);
    expect(() => checksumFrom(release, "kwok-linux-arm64", "github", "u")).toThrow(
      "u has no checksum for kwok-linux-arm64",
    );
  });

  it("maps upstream URLs into a mirror, and refuses an architecture upstream does not publish", () => {
    expect(mirrored("https://dl.k8s.io/release/v1/bin/x", "https://m.example/base/")).toBe(
      "https://m.example/base/dl.k8s.io/release/v1/bin/x",
    );
    expect(mirrored("https://dl.k8s.io/a", undefined)).toBe("https://dl.k8s.io/a");
    expect(hostArch("x64")).toBe("amd64");
    expect(() => hostArch("ia32")).toThrow(
      "No prebuilt binaries for ia32: upstream publishes Linux amd64 and arm64",
    );
  });
});
