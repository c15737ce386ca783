import type { Client } from "../src/client/client.js";

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
