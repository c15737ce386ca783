import type { Client } from "../src/client/client.js";
import { kubectl } from "../src/testing/kubectl.js";

/** The error a promise rejects with; fails the test if it resolves instead. */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (error: Error) => error,
  );
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms = 20_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms / 1000}s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Makes fresh namespaces `<prefix>-1`, `<prefix>-2`, …: tests share a plane, never their objects. */
export function namespaces(client: () => Client, prefix: string): () => Promise<string> {
  let counter = 0;
  return async () => {
    const name = `${prefix}-${++counter}`;
    await client().create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    return name;
  };
}

/**
 * Whether the API server has a feature gate on, as its own metrics report it
 * (`kubernetes_feature_enabled`, Kubernetes 1.26+): tests that depend on a gate read the truth
 * from the server rather than guessing from its version.
 */
export async function serverFeatureEnabled(kubeconfig: string, name: string): Promise<boolean> {
  const metrics = await kubectl(["get", "--raw", "/metrics"], { kubeconfig });
  const line = new RegExp(`^kubernetes_feature_enabled\\{name="${name}",stage="[A-Z]*"\\} ([01])$`, "m").exec(
    metrics.stdout,
  );
  if (!line) throw new Error(`the API server's /metrics does not report the ${name} feature gate`);
  return line[1] === "1";
}
