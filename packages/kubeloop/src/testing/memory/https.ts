import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import type { HttpRequest } from "../../client/index.js";
import { renderKubeconfig } from "../kubeconfig.js";
import { CertificateAuthority } from "../pki.js";
import { NotEmulated, notFound, StatusError, unsupportedMediaType } from "./errors.js";
import type { MemoryHandler } from "./handler.js";

/** A `MemoryApiServer` on a loopback HTTPS port, for kubectl and other clients. */
export interface ServedMemoryApiServer {
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** A kubeconfig for it (the CA inlined, a client certificate: every client is the administrator). */
  readonly kubeconfigPath: string;
  close(): Promise<void>;
}

const AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

/**
 * Serves `api` over HTTPS on 127.0.0.1 (a throwaway CA and serving certificate). Requests are
 * the in-process ones, decoded from HTTP: the same answers, refusals (`NotEmulated` as a 501 Status
 * naming the feature) and watches (newline-delimited JSON, chunked).
 */
export async function serveOverHttps(api: MemoryHandler): Promise<ServedMemoryApiServer> {
  const ca = CertificateAuthority.create("kubeloop-memory-ca");
  const serving = ca.issueServing({
    commonName: "kubeloop-memory",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
  });
  const client = ca.issueClient({ user: "kubeloop-admin", groups: ["system:masters"] });
  const open = new Set<ServerResponse>();
  const server = createServer({ cert: serving.cert, key: serving.key }, (request, response) => {
    open.add(response);
    response.on("close", () => open.delete(response));
    answer(api, request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, statusOf(error));
      else response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const url = `https://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), "kubeloop-memory-"));
  const kubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfigPath,
    renderKubeconfig({
      server: url,
      caCert: ca.cert,
      clientCert: client.cert,
      clientKey: client.key,
      clusterName: "memory",
      namespace: "default",
    }),
  );
  return {
    url,
    kubeconfigPath,
    close: async () => {
      for (const response of open) response.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function answer(
  api: MemoryHandler,
  incoming: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(incoming.url ?? "/", "https://localhost");
  const method = (incoming.method ?? "GET").toUpperCase();
  if (!METHODS.has(method)) throw new NotEmulated(`the HTTP method ${method}`);
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = value;
  let text = "";
  for await (const chunk of incoming) text += chunk;
  const contentType = incoming.headers["content-type"] ?? "";
  // Only JSON (and YAML for apply) is decoded. Protobuf, which kubectl's typed commands send
  // (`kubectl create configmap …`), is refused with a 415 saying what works instead.
  if (
    text !== "" &&
    !/^application\/(json|merge-patch\+json|json-patch\+json|strategic-merge-patch\+json|apply-patch\+yaml)/.test(
      contentType,
    )
  )
    throw unsupportedMediaType(
      `The in-memory API server does not emulate ${contentType || "this"} request bodies (kubectl's typed commands such as \`kubectl create configmap\` send protobuf): use manifests (\`kubectl create -f\`, \`kubectl apply\`), or test against a real API server (ControlPlane from kubeloop/testing).`,
    );
  const body =
    text === ""
      ? undefined
      : contentType.startsWith("application/apply-patch+yaml")
        ? parseYaml(text)
        : JSON.parse(text);
  const request: HttpRequest = {
    method: method as HttpRequest["method"],
    path: url.pathname,
    query,
    ...(body === undefined ? {} : { body }),
    ...(contentType ? { contentType } : {}),
    ...(incoming.headers.accept ? { accept: incoming.headers.accept } : {}),
  };
  if (query.watch === "true" || query.watch === "1") {
    const abort = new AbortController();
    response.on("close", () => abort.abort());
    const stream = await api.stream({ ...request, inactivityTimeoutMs: 0, signal: abort.signal });
    response.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    for await (const chunk of stream.body) response.write(chunk);
    response.end();
    return;
  }
  // The OpenAPI documents are not served (kubectl then skips client-side validation).
  if (url.pathname.startsWith("/openapi/")) throw notFound("", "", "");
  const answered = await api.handle(request);
  const discovery = url.pathname === "/api" || url.pathname === "/apis";
  send(
    response,
    { code: answered.status, body: answered.body },
    discovery ? AGGREGATED_DISCOVERY : undefined,
  );
}

function statusOf(error: unknown): { code: number; body: unknown } {
  if (error instanceof StatusError) return { code: error.status.code, body: error.status };
  const message = (error as Error).message ?? String(error);
  const code = error instanceof NotEmulated ? 501 : 500;
  const reason = error instanceof NotEmulated ? "NotEmulated" : "InternalError";
  return {
    code,
    body: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code },
  };
}

function send(
  response: ServerResponse,
  answer: { code: number; body: unknown },
  contentType = "application/json",
): void {
  const payload = JSON.stringify(answer.body ?? {});
  response.writeHead(answer.code, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(payload),
  });
  response.end(payload);
}
