import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";

/**
 * A forward proxy for tests: HTTP CONNECT and SOCKS5 (no authentication) on one port, telling the
 * two apart by the first byte. It counts what passes through it, so a test can prove that a client
 * used the proxy (and, with the proxy stopped, that it has no other way). `hosts` maps names only
 * the proxy can resolve, like a bastion in front of a private cluster.
 *
 * @example
 * ```ts
 * import { startTunnelProxy } from "kubeloop/testing/servers";
 *
 * const proxy = await startTunnelProxy({ hosts: { "api.internal": "127.0.0.1" } });
 * // kubeconfig: clusters[].cluster.proxy-url: proxy.httpUrl (or proxy.socks5Url)
 * // ... run the client ...
 * const { tunnels, bytes } = proxy; // ["api.internal:6443"], 18233: the client went through it
 * await proxy.close();
 * ```
 */
export interface TunnelProxy {
  /** The loopback port both protocols share. */
  readonly port: number;
  /** `http://127.0.0.1:<port>`, for `proxy-url` or `HTTPS_PROXY`. */
  readonly httpUrl: string;
  /** `socks5://127.0.0.1:<port>` */
  readonly socks5Url: string;
  /** Every tunnel opened, as the `host:port` the client asked for, in order. */
  readonly tunnels: string[];
  /** Tunnels refused for missing or wrong credentials. */
  readonly refused: number;
  /** Bytes carried through tunnels, both directions. */
  readonly bytes: number;
  /** Stops listening and cuts every tunnel. */
  close(): Promise<void>;
}

/** What a {@link TunnelProxy} resolves and whom it lets through; by default any client, names by DNS. */
export interface TunnelProxyOptions {
  /** Names the proxy resolves itself, e.g. `{ "api.internal": "127.0.0.1" }`. */
  hosts?: Record<string, string>;
  /**
   * Credentials the proxy demands: `Proxy-Authorization: Basic …` for CONNECT (else 407), SOCKS5
   * username/password (RFC 1929). The URLs then carry them (`http://user:password@127.0.0.1:…`).
   */
  auth?: { username: string; password: string };
}

/**
 * Starts a {@link TunnelProxy} on a free loopback port: how to test that a client reaches a cluster
 * through `proxy-url` or `HTTPS_PROXY` (HTTP CONNECT or SOCKS5), as users behind a corporate proxy
 * or a bastion do, and that it sends the proxy's credentials.
 *
 * @example
 * ```ts
 * import { startTunnelProxy } from "kubeloop/testing/servers";
 *
 * const proxy = await startTunnelProxy({
 *   hosts: { "api.internal": "127.0.0.1" }, // a name only the proxy resolves: no way around it
 *   auth: { username: "ops", password: "s3cret" },
 * });
 * // a kubeconfig with server https://api.internal:<port> and proxy-url proxy.httpUrl
 * // (http://ops:s3cret@127.0.0.1:<port>); connect a client and list something ...
 * const wentThrough = proxy.tunnels.length > 0 && proxy.refused === 0;
 * await proxy.close();
 * ```
 */
export async function startTunnelProxy(options: TunnelProxyOptions = {}): Promise<TunnelProxy> {
  const sockets = new Set<Socket>();
  const tunnels: string[] = [];
  let bytes = 0;
  let refused = 0;
  const auth = options.auth;
  const allowed = (username: string, password: string) => {
    const ok = !auth || (username === auth.username && password === auth.password);
    if (!ok) refused++;
    return ok;
  };
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const dial = async (host: string, port: number): Promise<Socket> => {
    const upstream = connect({ host: options.hosts?.[host] ?? host, port });
    track(upstream);
    await once(upstream, "connect");
    return upstream;
  };
  const join = (client: Socket, upstream: Socket, destination: string) => {
    tunnels.push(destination);
    for (const side of [client, upstream])
      side.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
      });
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  };
  const server = createServer(async (client) => {
    track(client);
    try {
      const first = await take(client, 1);
      if (first[0] === 5) await socks5(client, dial, join, auth ? allowed : undefined);
      else {
        client.unshift(first);
        await httpConnect(client, dial, join, auth ? allowed : undefined);
      }
    } catch {
      client.destroy();
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  const userinfo = auth ? `${encodeURIComponent(auth.username)}:${encodeURIComponent(auth.password)}@` : "";
  return {
    port,
    httpUrl: `http://${userinfo}127.0.0.1:${port}`,
    socks5Url: `socks5://${userinfo}127.0.0.1:${port}`,
    tunnels,
    get bytes() {
      return bytes;
    },
    get refused() {
      return refused;
    },
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

type Dial = (host: string, port: number) => Promise<Socket>;
type Join = (client: Socket, upstream: Socket, destination: string) => void;
type Check = (username: string, password: string) => boolean;

/** `CONNECT host:port HTTP/1.1` … a blank line; answers 200 and joins the two sockets. */
async function httpConnect(client: Socket, dial: Dial, join: Join, check?: Check): Promise<void> {
  let head = Buffer.alloc(0);
  while (!head.includes("\r\n\r\n")) head = Buffer.concat([head, await take(client)]);
  const end = head.indexOf("\r\n\r\n") + 4;
  if (end < head.length) client.unshift(head.subarray(end));
  const text = head.subarray(0, end).toString("latin1");
  const [method, target = ""] = text.split(" ");
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(target);
  if (method !== "CONNECT" || !match) {
    client.end("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  if (check) {
    const basic = /^proxy-authorization:\s*basic\s+(\S+)\s*$/im.exec(text)?.[1];
    const [username = "", ...rest] = Buffer.from(basic ?? "", "base64")
      .toString("utf8")
      .split(":");
    if (!basic || !check(username, rest.join(":"))) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
  }
  const upstream = await dial(match[1] as string, Number(match[2])).catch(() => undefined);
  if (!upstream) {
    client.end("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  join(client, upstream, target);
}

/** RFC 1928, CONNECT only; no authentication or RFC 1929's username/password. The version byte is read. */
async function socks5(client: Socket, dial: Dial, join: Join, check?: Check): Promise<void> {
  const [count = 0] = await take(client, 1);
  const methods = [...(await take(client, count))];
  const method = check ? 2 : 0;
  if (!methods.includes(method)) {
    client.end(Buffer.from([5, 0xff])); // no acceptable method
    return;
  }
  client.write(Buffer.from([5, method]));
  if (check) {
    await take(client, 1); // the sub-negotiation's version
    const username = (await take(client, (await take(client, 1))[0] as number)).toString("utf8");
    const password = (await take(client, (await take(client, 1))[0] as number)).toString("utf8");
    const ok = check(username, password);
    client.write(Buffer.from([1, ok ? 0 : 1]));
    if (!ok) {
      client.end();
      return;
    }
  }
  const [, command, , type] = await take(client, 4);
  let host: string;
  if (type === 1) host = [...(await take(client, 4))].join(".");
  else if (type === 3) host = (await take(client, (await take(client, 1))[0] as number)).toString("latin1");
  else if (type === 4) {
    const raw = await take(client, 16);
    host = Array.from({ length: 8 }, (_, i) => raw.readUInt16BE(i * 2).toString(16)).join(":");
  } else throw new Error(`SOCKS5 address type ${type}`);
  const port = (await take(client, 2)).readUInt16BE(0);
  const reply = (code: number) => Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
  if (command !== 1) {
    client.end(reply(7)); // command not supported
    return;
  }
  const upstream = await dial(host, port).catch(() => undefined);
  if (!upstream) {
    client.end(reply(5)); // connection refused
    return;
  }
  client.write(reply(0));
  join(client, upstream, `${type === 4 ? `[${host}]` : host}:${port}`);
}

/** The next `size` bytes (or whatever is buffered, without `size`), waiting for them to arrive. */
async function take(socket: Socket, size?: number): Promise<Buffer> {
  if (size === 0) return Buffer.alloc(0);
  for (;;) {
    const chunk = socket.read(size) as Buffer | null;
    if (chunk) return chunk;
    if (socket.readableEnded || socket.destroyed) throw new Error("the client went away");
    await Promise.race([once(socket, "readable"), once(socket, "close")]);
  }
}
