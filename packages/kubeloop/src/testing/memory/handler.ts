import type { HttpRequest, HttpResponse, StreamRequest } from "../../client/index.js";
import type { UserInfo } from "./rbac.js";

/** A watch or a streamed list, as the in-memory server opens it. */
export interface MemoryStream {
  status: number;
  body: AsyncIterable<Uint8Array>;
  events?: AsyncIterable<{ type: string; object: unknown }>;
  close(): void;
}

/**
 * What the in-memory transport and the HTTPS front end ask of the in-memory server (`MemoryApiServer`
 * implements it): the server depends on them, not they on it.
 */
export interface MemoryHandler {
  /** Answers one request, as the user it names (the administrator when none). */
  handle(request: HttpRequest & { userAgent?: string; user?: UserInfo }): Promise<HttpResponse>;
  /** Opens a watch, or a streamed list. */
  stream(request: StreamRequest & { user?: UserInfo }): Promise<MemoryStream>;
}
