import { createServer } from "node:net";

/**
 * Free TCP ports on the loopback interface, found by letting the kernel pick them. They are held
 * open together, so they cannot repeat.
 *
 * Another process may take one before our component binds it; the control plane detects a bind
 * failure in the component's log and starts again on fresh ports (see control-plane.ts).
 */
export async function freePorts(count: number, host = "127.0.0.1"): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => {
      return new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        const server = createServer();
        server.unref();
        server.once("error", reject);
        server.listen({ host, port: 0, exclusive: true }, () => resolve(server));
      });
    }),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    return typeof address === "object" && address ? address.port : 0;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}
