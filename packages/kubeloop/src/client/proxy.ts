import "./node-check.js";
import { isIP } from "node:net";
import type { Duplex } from "node:stream";
import type { buildConnector as BuildConnector } from "undici";
import { ConfigError, ConnectionError } from "./errors.js";
import { buildConnector, Client } from "./undici.js";

/**
 * Proxies, as client-go uses them: a cluster's `proxy-url` (http, https, socks5), else
 * `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` from the environment with Go's rules
 * (`golang.org/x/net/http/httpproxy`). The proxy is chosen once per cluster when the configuration
 * loads (the server never changes), so a request pays nothing for it; the transport's pool dials
 * each new connection through the tunnel {@link proxyConnector} opens.
 */

const PROXY_SCHEMES = new Set(["http:", "https:", "socks5:", "socks5h:"]);

/** A proxy URL checked the way client-go checks `proxy-url`; `what` names it in the message. */
export function parseProxyUrl(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(
      `${what} "${value}" is not a URL; write it as http://host:port or socks5://host:port`,
    );
  }
  if (!PROXY_SCHEMES.has(url.protocol) || !url.hostname)
    throw new ConfigError(
      `${what} "${value}" is not supported: the scheme must be http, https or socks5 (with a host)`,
    );
  return url.href.replace(/\/$/, "");
}

/**
 * The proxy Go's `http.ProxyFromEnvironment` picks for `server`, or `undefined` for none:
 * `HTTPS_PROXY` for https servers (`HTTP_PROXY` for http), upper case first; none for `localhost`,
 * loopback addresses and whatever `NO_PROXY` names (`*`, IPs, CIDRs, `host`, `.domain`, `*.domain`,
 * each optionally `:port`; a bare domain also matches its subdomains). A value without a scheme is
 * an http proxy, as in Go.
 */
export function proxyFromEnvironment(
  server: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const url = new URL(server);
  const name = url.protocol === "https:" ? "HTTPS_PROXY" : "HTTP_PROXY";
  const value = env[name] || env[name.toLowerCase()];
  if (!value) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  if (!useProxy(host, port, env.NO_PROXY || env.no_proxy || "")) return undefined;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  return parseProxyUrl(withScheme, `$${env[name] ? name : name.toLowerCase()}`);
}

function useProxy(host: string, port: string, noProxy: string): boolean {
  if (host === "localhost" || isLoopback(host)) return false;
  const ip = isIP(host) ? host : undefined;
  for (const raw of noProxy.split(",")) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === "*") return false;
    if (entry.includes("/")) {
      if (ip && inCidr(ip, entry)) return false;
      continue;
    }
    let [entryHost, entryPort] = splitHostPort(entry);
    if (!entryHost) continue;
    if (isIP(entryHost)) {
      if (ip && sameIp(ip, entryHost) && (!entryPort || entryPort === port)) return false;
      continue;
    }
    if (ip) continue; // domain entries never match an IP address
    if (entryHost.startsWith("*.")) entryHost = entryHost.slice(1);
    const matchHost = !entryHost.startsWith(".");
    const suffix = matchHost ? `.${entryHost}` : entryHost;
    if ((host.endsWith(suffix) || (matchHost && host === entryHost)) && (!entryPort || entryPort === port))
      return false;
  }
  return true;
}

function splitHostPort(entry: string): [string, string | undefined] {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return [bracketed[1] as string, bracketed[2]];
  if (isIP(entry) === 6) return [entry, undefined];
  const colon = entry.lastIndexOf(":");
  return colon >= 0 ? [entry.slice(0, colon), entry.slice(colon + 1)] : [entry, undefined];
}

function isLoopback(host: string): boolean {
  if (isIP(host) === 4) return host.startsWith("127.");
  if (isIP(host) === 6) return sameIp(host, "::1") || host.startsWith("::ffff:127.");
  return false;
}

/** An IP address as 16 bytes (IPv4 mapped into IPv6, as Go compares them). */
function ipBytes(ip: string): number[] {
  if (isIP(ip) === 4) return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, ...ip.split(".").map(Number)];
  const [head = "", tail = ""] = ip.split("::");
  const parse = (part: string) =>
    part
      ? part.split(":").flatMap((group) => {
          if (group.includes(".")) return ipBytes(group).slice(12);
          const value = Number.parseInt(group, 16);
          return [value >> 8, value & 255];
        })
      : [];
  const start = parse(head);
  const end = parse(tail);
  return [...start, ...new Array(16 - start.length - end.length).fill(0), ...end];
}

function sameIp(a: string, b: string): boolean {
  return ipBytes(a).join(".") === ipBytes(b).join(".");
}

function inCidr(ip: string, cidr: string): boolean {
  const [base = "", bitsText = ""] = cidr.split("/");
  if (!isIP(base) || !/^\d+$/.test(bitsText) || isIP(base) !== isIP(ip)) return false;
  const bits = Number(bitsText) + (isIP(base) === 4 ? 96 : 0);
  const a = ipBytes(ip);
  const b = ipBytes(base);
  for (let i = 0; i < bits; i++) {
    const mask = 0x80 >> (i % 8);
    if (((a[i >> 3] as number) & mask) !== ((b[i >> 3] as number) & mask)) return false;
  }
  return true;
}

type Connector = BuildConnector.connector;

/**
 * An undici `connect` function that reaches each server through `proxy`: an HTTP CONNECT tunnel
 * (http or https proxy; credentials in the URL become `Proxy-Authorization`) or a SOCKS5 one (the
 * proxy resolves the server's name, so private DNS names work), then TLS to the server with `tls`,
 * verified by the server's name or `servername`, as without a proxy.
 */
export function proxyConnector(
  proxy: string,
  tls: BuildConnector.BuildOptions,
): { connect: Connector; close(): Promise<void> } {
  const url = new URL(proxy);
  const endpoint = buildConnector({ ...tls, allowH2: false });
  const { open, close } = url.protocol.startsWith("socks") ? socksTunnel(url) : connectTunnel(url);
  const connect: Connector = (options, callback) => {
    const port = Number(options.port) || (options.protocol === "https:" ? 443 : 80);
    open(options.hostname, port).then(
      (socket) => {
        if (options.protocol !== "https:") callback(null, socket as never);
        else endpoint({ ...options, httpSocket: socket as never }, callback);
      },
      (error: Error) =>
        callback(
          new ConnectionError(`Could not open a tunnel through the proxy ${redact(url)}: ${error.message}`, {
            cause: error,
          }),
          null,
        ),
    );
  };
  return { connect, close };
}

interface Tunnel {
  open(host: string, port: number): Promise<Duplex>;
  close(): Promise<void>;
}

function connectTunnel(url: URL): Tunnel {
  const headers: Record<string, string> = {};
  if (url.username || url.password) {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers["proxy-authorization"] = `Basic ${Buffer.from(credentials).toString("base64")}`;
  }
  // One client per proxy; each CONNECT takes its socket away for the tunnel.
  const client = new Client(url.origin);
  const open = async (host: string, port: number) => {
    const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
    const { socket, statusCode } = await client.connect({
      path: authority,
      headers: { ...headers, host: authority },
    });
    if (statusCode !== 200) {
      socket.destroy();
      throw new Error(`the proxy answered CONNECT ${authority} with HTTP ${statusCode}`);
    }
    return socket;
  };
  return { open, close: () => client.close() };
}

function socksTunnel(url: URL): Tunnel {
  const open = async (host: string, port: number) => {
    // Loaded only by clients behind a SOCKS proxy.
    const { SocksClient } = await import("socks");
    const { socket } = await SocksClient.createConnection({
      proxy: {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: Number(url.port) || 1080,
        type: 5,
        ...(url.username ? { userId: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      },
      command: "connect",
      destination: { host, port },
    });
    return socket;
  };
  return { open, close: async () => {} };
}

/** The proxy's URL for messages, without its password. */
export function redact(url: URL): string {
  if (!url.password) return url.href.replace(/\/$/, "");
  const copy = new URL(url.href);
  copy.password = "***";
  return copy.href.replace(/\/$/, "");
}
