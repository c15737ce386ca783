import type { Server } from "node:http";

/**
 * Closes an HTTP(S) server the way a graceful shutdown needs: stops accepting connections, hangs up
 * idle keep-alive connections at once, lets requests in flight finish, and after `graceMs` hangs
 * up whatever is still open. `server.close()` alone waits for every keep-alive connection to go
 * quiet, and a client that keeps sending on one (the API server calling a webhook) keeps it open:
 * a shutdown could wait for minutes. Handlers should answer with `connection: close` meanwhile,
 * so a connection goes when its request is answered.
 *
 * @example
 * ```ts
 * await closeServer(server, 5_000);
 * ```
 */
export function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
