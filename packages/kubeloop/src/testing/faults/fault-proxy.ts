import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { sleep, TokenBucket } from "../../util/index.js";

/**
 * A TCP proxy that injects network faults between a client and a server, for reliability tests:
 * point the client at {@link FaultProxy.url} instead of the server (TLS passes through untouched,
 * so the server's certificate must name 127.0.0.1, as the ControlPlane's does).
 *
 * The faults are what networks do to long-lived connections:
 * - {@link FaultProxy.reset}: every open connection is reset (RST), like a restarted load balancer.
 * - {@link FaultProxy.stall}: open connections stop moving bytes in both directions but stay open,
 *   like a dropped NAT entry or a load-balancer failover: the half-open connection that only a
 *   timeout or a heartbeat reveals. Stalled connections never recover (their peer is gone); new
 *   connections flow unless `newConnections` is set too.
 * - {@link FaultProxy.refuse}: the port stops listening, so new connections are refused.
 * - {@link FaultProxy.setLatency} and {@link FaultProxy.setBandwidth}: every byte is delayed, or
 *   the byte rate of each direction (all connections together) is capped.
 *
 * {@link FaultProxy.heal} ends the refusal, latency, bandwidth cap and the stalling of new
 * connections. {@link FaultProxy.stats} counts connections and bytes, so a test can see e.g. that a
 * client reconnected.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 * import { startFaultProxy } from "kubeloop/testing/faults";
 *
 * const plane = await new ControlPlane().start();
 * const proxy = await startFaultProxy({ target: new URL(plane.server) });
 * // a client whose server is proxy.url (same CA and credentials) ...
 * proxy.stall(); // open connections go silent
 * // ... the client must notice and reconnect on its own ...
 * await proxy.close();
 * ```
 */
export interface FaultProxy {
  /** The loopback port it listens on. */
  readonly port: number;
  /** `https://127.0.0.1:<port>`: the server address to give the client. */
  readonly url: string;
  /** Connections and bytes so far: proof that a client reconnected, or that traffic flowed. */
  readonly stats: FaultProxyStats;
  /** Resets (RST) every open connection. */
  reset(): void;
  /** Open connections stop moving bytes and stay open; with `newConnections`, later ones too. */
  stall(options?: { newConnections?: boolean }): void;
  /** Stops listening: new connections are refused (ECONNREFUSED) until {@link heal}. */
  refuse(): Promise<void>;
  /** Delays every chunk by `ms` in each direction (0: none). */
  setLatency(ms: number): void;
  /** Caps each direction at `bytesPerSecond`, all connections together (undefined: no cap). */
  setBandwidth(bytesPerSecond: number | undefined): void;
  /** Ends every fault but the stalled connections, which stay dead. */
  heal(): Promise<void>;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** What passed through a {@link FaultProxy}, live (read it again for new values). */
export interface FaultProxyStats {
  /** Connections accepted since start. */
  readonly accepted: number;
  /** Connections open now (stalled ones included). */
  readonly open: number;
  /** Bytes forwarded, both directions. */
  readonly bytes: number;
}

/** Where a {@link FaultProxy} forwards to. */
export interface FaultProxyOptions {
  /** Where to forward: a URL (`https://127.0.0.1:6443`) or host and port. */
  target: URL | { host: string; port: number };
}

/** A direction's queue is paused above this, so a slowed direction does not buffer without bound. */
const HIGH_WATER_BYTES = 1 << 20;

/**
 * Starts a {@link FaultProxy} in front of `target` on a free loopback port, passing bytes through
 * untouched until a test injects a fault: how to show that a client survives a reset, a half-open
 * connection or a refused port, which a healthy local server never produces.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 * import { startFaultProxy } from "kubeloop/testing/faults";
 *
 * const plane = await new ControlPlane().start();
 * const proxy = await startFaultProxy({ target: new URL(plane.server) });
 * const before = proxy.stats.accepted;
 * proxy.reset(); // every open connection gets an RST
 * // ... a client pointed at proxy.url must reconnect: proxy.stats.accepted > before ...
 * await proxy.close();
 * await plane.stop();
 * ```
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target =
    options.target instanceof URL
      ? { host: options.target.hostname, port: Number(options.target.port || 443) }
      : options.target;
  const connections = new Set<Connection>();
  const counters = { accepted: 0, bytes: 0 };
  const faults: Faults = { latencyMs: 0, bandwidth: undefined, stallNew: false };

  const onConnection = (client: Socket) => {
    counters.accepted++;
    const upstream = connect(target);
    const connection = new Connection(client, upstream, faults, counters);
    connections.add(connection);
    connection.closed.then(() => connections.delete(connection));
    if (faults.stallNew) connection.stall();
  };
  let server: Server = createServer(onConnection);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  let listening = true;

  const stopListening = async () => {
    if (!listening) return;
    listening = false;
    await new Promise((resolve) => server.close(resolve));
  };
  return {
    port,
    url: `https://127.0.0.1:${port}`,
    stats: liveStats(counters, connections),
    reset() {
      for (const connection of connections) connection.reset();
    },
    stall(stallOptions = {}) {
      for (const connection of connections) connection.stall();
      if (stallOptions.newConnections) faults.stallNew = true;
    },
    async refuse() {
      // server.close() waits for open connections; stop accepting first, then close in background.
      if (!listening) return;
      listening = false;
      server.close();
    },
    setLatency(ms) {
      if (!(ms >= 0)) throw new RangeError(`latency must be 0 or more milliseconds, got ${ms}`);
      faults.latencyMs = ms;
    },
    setBandwidth(bytesPerSecond) {
      if (bytesPerSecond !== undefined && !(bytesPerSecond > 0))
        throw new RangeError(`bandwidth must be more than 0 bytes per second, got ${bytesPerSecond}`);
      faults.bandwidth = bytesPerSecond === undefined ? undefined : bandwidthOf(bytesPerSecond);
    },
    async heal() {
      faults.latencyMs = 0;
      faults.bandwidth = undefined;
      faults.stallNew = false;
      if (!listening) {
        server = createServer(onConnection);
        server.listen(port, "127.0.0.1");
        await once(server, "listening");
        listening = true;
      }
    },
    async close() {
      const closing = stopListening();
      for (const connection of connections) connection.destroy();
      await closing;
    },
  };
}

/** Counters read when asked, so a test sees them move. */
function liveStats(counters: { accepted: number; bytes: number }, connections: Set<Connection>) {
  return {
    get accepted() {
      return counters.accepted;
    },
    get open() {
      return connections.size;
    },
    get bytes() {
      return counters.bytes;
    },
  };
}

/** One bucket each way, so a download does not eat an upload's share. */
function bandwidthOf(bytesPerSecond: number): NonNullable<Faults["bandwidth"]> {
  const burst = burstFor(bytesPerSecond);
  return { up: new TokenBucket(bytesPerSecond, burst), down: new TokenBucket(bytesPerSecond, burst), burst };
}

/** A tenth of a second of traffic at once: smooth enough to be a rate, coarse enough to be cheap. */
function burstFor(bytesPerSecond: number): number {
  return Math.max(1024, Math.ceil(bytesPerSecond / 10));
}

interface Faults {
  latencyMs: number;
  bandwidth: { up: TokenBucket; down: TokenBucket; burst: number } | undefined;
  stallNew: boolean;
}

/** One proxied connection: two directions, each a queue drained under the current faults. */
class Connection {
  readonly closed: Promise<void>;
  private stalled = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket,
    faults: Faults,
    counters: { bytes: number },
  ) {
    this.closed = new Promise((resolve) => {
      let open = 2;
      const onClose = () => {
        this.abort.abort();
        // One side gone: the other goes too (a proxy does not keep half a conversation).
        client.destroy();
        upstream.destroy();
        if (--open === 0) resolve();
      };
      client.once("close", onClose);
      upstream.once("close", onClose);
    });
    for (const socket of [client, upstream]) socket.on("error", () => socket.destroy());
    const isStalled = () => this.stalled;
    const signal = this.abort.signal;
    new Direction(client, upstream, faults, counters, isStalled, signal, "up");
    new Direction(upstream, client, faults, counters, isStalled, signal, "down");
  }

  stall(): void {
    this.stalled = true;
    this.client.pause();
    this.upstream.pause();
  }

  reset(): void {
    this.client.resetAndDestroy();
    this.upstream.resetAndDestroy();
  }

  destroy(): void {
    this.client.destroy();
    this.upstream.destroy();
  }
}

class Direction {
  private readonly queue: { chunk: Buffer; due: number }[] = [];
  private queuedBytes = 0;
  private draining = false;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly faults: Faults,
    private readonly counters: { bytes: number },
    private readonly isStalled: () => boolean,
    private readonly signal: AbortSignal,
    private readonly side: "up" | "down",
  ) {
    from.on("data", (chunk: Buffer) => {
      this.queue.push({ chunk, due: performance.now() + faults.latencyMs });
      this.queuedBytes += chunk.length;
      if (this.queuedBytes > HIGH_WATER_BYTES) from.pause();
      this.drain();
    });
    from.on("end", () => {
      this.queue.push({ chunk: Buffer.alloc(0), due: performance.now() + faults.latencyMs });
      this.drain();
    });
  }

  /** Forwards the queue in order; each chunk waits for its due time and the bandwidth cap. */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0 && !this.isStalled() && !this.signal.aborted) {
        const head = this.queue[0] as { chunk: Buffer; due: number };
        const wait = head.due - performance.now();
        if (wait > 0) await sleep(wait, this.signal);
        if (head.chunk.length === 0) {
          this.queue.shift();
          this.to.end();
          continue;
        }
        const bandwidth = this.faults.bandwidth;
        let chunk = head.chunk;
        if (bandwidth) {
          chunk = chunk.subarray(0, bandwidth.burst);
          await bandwidth[this.side].take(chunk.length, this.signal);
        }
        if (this.isStalled()) return;
        if (chunk.length === head.chunk.length) this.queue.shift();
        else head.chunk = head.chunk.subarray(chunk.length);
        this.queuedBytes -= chunk.length;
        this.counters.bytes += chunk.length;
        if (!this.to.write(chunk)) await Promise.race([once(this.to, "drain"), once(this.to, "close")]);
        if (this.queuedBytes <= HIGH_WATER_BYTES && !this.isStalled()) this.from.resume();
      }
    } catch {
      // Aborted: the connection closed while a chunk waited.
    } finally {
      this.draining = false;
    }
  }
}
