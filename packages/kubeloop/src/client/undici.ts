import "./node-check.js";
import { createRequire } from "node:module";
import type * as Undici from "undici";

// undici's Pool, Client and connector from their own files, not from undici's index, which also
// loads fetch, WebSocket, the cache and the mock agents: ~13 MiB of RSS and 100+ ms at every start,
// for nothing the client uses. undici is pinned (package.json); manager/startup.test.ts loads these
// paths, so an upgrade that moves them fails there. The `createRequire(import.meta.url)(…)` form is
// the one `kubeloop build`'s bundler reads as `require` and bundles.

// What undici's index does for every dispatcher: `request`, `stream`, `pipeline`, `upgrade` and
// `connect` are on Dispatcher's prototype only once its api/ folder is assigned there.
Object.assign(
  (createRequire(import.meta.url)("undici/lib/dispatcher/dispatcher.js") as { prototype: object }).prototype,
  createRequire(import.meta.url)("undici/lib/api/index.js"),
);

/** undici's connection pool to one origin. */
export const Pool = createRequire(import.meta.url)("undici/lib/dispatcher/pool.js") as typeof Undici.Pool;
export type Pool = Undici.Pool;
/** undici's single-connection client (the proxy's CONNECT). */
export const Client = createRequire(import.meta.url)(
  "undici/lib/dispatcher/client.js",
) as typeof Undici.Client;
/** undici's TLS/TCP connector. */
export const buildConnector = createRequire(import.meta.url)(
  "undici/lib/core/connect.js",
) as typeof Undici.buildConnector;
