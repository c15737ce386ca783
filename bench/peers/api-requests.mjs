// The API server's own count of the requests an operator made (apiserver_request_total from its
// /metrics), read with the admin credentials of the kubeconfig (bench/peers.mjs).
import { readFileSync } from "node:fs";
import { request } from "node:https";

export function kubeconfigCredentials(path) {
  const text = readFileSync(path, "utf8");
  const field = (key) => Buffer.from(new RegExp(`${key}:\\s*(\\S+)`).exec(text)?.[1] ?? "", "base64");
  return {
    server: /server:\s*(\S+)/.exec(text)?.[1] ?? "",
    ca: field("certificate-authority-data"),
    cert: field("client-certificate-data"),
    key: field("client-key-data"),
  };
}

function httpsText(creds, path) {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, creds.server),
      { ca: creds.ca, cert: creds.cert, key: creds.key },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c) => {
          body += c;
        });
        res.on("end", () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`${path}: ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/**
 * Requests on widgets and configmaps (watches excluded: they are counted when they end), minus the
 * load generator's own (POST widgets, PATCH widgets without subresource). Its watcher's one LIST
 * per start is subtracted by the caller.
 */
export async function operatorRequests(creds) {
  const text = await httpsText(creds, "/metrics");
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (labels.resource !== "widgets" && labels.resource !== "configmaps") continue;
    if (labels.verb === "WATCH") continue;
    if (labels.resource === "widgets" && labels.verb === "POST") continue;
    if (labels.resource === "widgets" && labels.verb === "PATCH" && !labels.subresource) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}
