import { createServer, type Server, Socket } from "node:net";

/**
 * A TCP proxy on loopback between a client and the API server, for testing what the network does
 * to watches: cut every connection, refuse new ones, or silently stop passing bytes (a half-open
 * connection, as a dead NAT or load balancer leaves behind).
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<[Socket, Socket]>();
  private mode: "pass" | "refuse" | "blackhole" = "pass";
  port = 0;
  connections = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<this> {
    this.server = createServer((client) => {
      this.connections++;
      if (this.mode === "refuse") {
        client.destroy();
        return;
      }
      const upstream = new Socket();
      upstream.connect(this.target.port, this.target.host);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const forward = (from: Socket, to: Socket) =>
        from.on("data", (chunk) => {
          if (this.mode !== "blackhole") to.write(chunk);
        });
      forward(client, upstream);
      forward(upstream, client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(pair);
      };
      client.on("close", close).on("error", close);
      upstream.on("close", close).on("error", close);
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
    return this;
  }

  /** Drops every open connection, and refuses new ones until {@link pass}. */
  cutAndRefuse(): void {
    this.mode = "refuse";
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Keeps connections open but passes no bytes: neither side learns anything is wrong. */
  blackhole(): void {
    this.mode = "blackhole";
  }

  pass(): void {
    this.mode = "pass";
  }

  async stop(): Promise<void> {
    this.cutAndRefuse();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
