import { createReadStream, existsSync, statSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join, normalize } from "node:path";

/**
 * A static file server on loopback for a tree written by `kubeloop assets pack --mirror`: what a
 * company mirror of dl.k8s.io, github.com and registry.k8s.io serves. Faults can be set per path
 * (404, 500, a reset mid-body, a stall, one corrupted byte), and every GET is counted.
 */

export type MirrorFault = "404" | "500" | "reset" | "stall" | "corrupt" | "drop-once";

export interface AssetsMirror {
  url: string;
  port: number;
  /** GETs per path, e.g. `/github.com/etcd-io/…tar.gz` → 1. */
  readonly hits: Map<string, number>;
  /** Faults to apply, keyed by a suffix of the request path. */
  readonly faults: Map<string, MirrorFault>;
  close(): Promise<void>;
}

export interface AssetsMirrorOptions {
  /** Serve HTTPS with this certificate and key (PEM); else plain HTTP. */
  tls?: { cert: string; key: string };
  /** The host name in {@link AssetsMirror.url}; defaults to 127.0.0.1. */
  host?: string;
}

export async function startAssetsMirror(
  dir: string,
  options: AssetsMirrorOptions = {},
): Promise<AssetsMirror> {
  const hits = new Map<string, number>();
  const faults = new Map<string, MirrorFault>();
  const sockets = new Set<import("node:net").Socket>();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://mirror").pathname);
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const file = join(dir, normalize(path));
    const [suffix, fault] = [...faults.entries()].find(([end]) => path.endsWith(end)) ?? [];
    if (fault === "drop-once" && suffix) {
      // As a keep-alive connection the server has just timed out: closed before any answer.
      faults.delete(suffix);
      req.socket.destroy();
      return;
    }
    if (fault === "404" || !file.startsWith(dir) || !existsSync(file) || statSync(file).isDirectory()) {
      res.writeHead(404).end("not found");
      return;
    }
    if (fault === "500") {
      res.writeHead(500).end("internal error");
      return;
    }
    const size = statSync(file).size;
    res.writeHead(200, { "content-length": size, "content-type": "application/octet-stream" });
    if (fault === "reset" || fault === "stall") {
      // Half the file, then either cut the connection or go silent with it open.
      const half = createReadStream(file, { start: 0, end: Math.floor(size / 2) });
      half.on("data", (chunk) => res.write(chunk));
      half.on("end", () => {
        if (fault === "reset") res.socket?.resetAndDestroy();
      });
      return;
    }
    if (fault === "corrupt") {
      let flipped = false;
      const stream = createReadStream(file);
      stream.on("data", (chunk) => {
        const bytes = Buffer.from(chunk as Buffer);
        if (!flipped && bytes.length > 100) {
          bytes[100] = (bytes[100] ?? 0) ^ 0xff;
          flipped = true;
        }
        res.write(bytes);
      });
      stream.on("end", () => res.end());
      return;
    }
    createReadStream(file).pipe(res);
  };
  const server: Server = options.tls ? createHttpsServer(options.tls, handler) : createHttpServer(handler);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const scheme = options.tls ? "https" : "http";
  return {
    url: `${scheme}://${options.host ?? "127.0.0.1"}:${port}`,
    port,
    hits,
    faults,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
