import { Agent, request } from "node:https";

/**
 * The few API calls the testing layer makes as the admin (readiness, namespaces, nodes, CRDs):
 * JSON over a keep-alive HTTPS agent with the admin's client certificate. Operators use the
 * kubeloop client; this stays small so the control plane depends on nothing above it.
 */

export interface HttpResponse<T = unknown> {
  status: number;
  body: T;
  text: string;
}

export interface AdminHttpOptions {
  server: string;
  caCert: string;
  clientCert: string;
  clientKey: string;
}

/** An ordinary request must answer within this; the control plane polls, so a hung call is retried. */
const REQUEST_TIMEOUT_MS = 10_000;

export class AdminHttp {
  private readonly agent: Agent;
  private readonly base: URL;

  constructor(options: AdminHttpOptions) {
    this.base = new URL(options.server);
    this.agent = new Agent({
      keepAlive: true,
      ca: options.caCert,
      cert: options.clientCert,
      key: options.clientKey,
      maxSockets: 8,
    });
  }

  get<T = unknown>(path: string): Promise<HttpResponse<T>> {
    return this.request<T>("GET", path);
  }

  post<T = unknown>(path: string, body: unknown): Promise<HttpResponse<T>> {
    return this.request<T>("POST", path, body);
  }

  put<T = unknown>(path: string, body: unknown): Promise<HttpResponse<T>> {
    return this.request<T>("PUT", path, body);
  }

  delete<T = unknown>(path: string): Promise<HttpResponse<T>> {
    return this.request<T>("DELETE", path);
  }

  request<T = unknown>(method: string, path: string, body?: unknown): Promise<HttpResponse<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        new URL(path, this.base),
        {
          method,
          agent: this.agent,
          timeout: REQUEST_TIMEOUT_MS,
          headers: {
            accept: "application/json",
            ...(payload
              ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            if ((res.headers["content-type"] ?? "").includes("json") && text) {
              try {
                parsed = JSON.parse(text);
              } catch {
                parsed = text;
              }
            }
            resolve({ status: res.statusCode ?? 0, body: parsed as T, text });
          });
          res.on("error", reject);
        },
      );
      req.on("timeout", () =>
        req.destroy(new Error(`${method} ${path} timed out after ${REQUEST_TIMEOUT_MS} ms`)),
      );
      req.on("error", reject);
      if (payload) req.write(payload);
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
