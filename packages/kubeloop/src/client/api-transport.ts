import type { HttpRequest, HttpResponse, StreamRequest, StreamResponse } from "./transport.js";

/**
 * What the {@link Client} needs from a transport: one request and its decoded answer, or a stream
 * (watches, streamed lists). {@link Transport} speaks HTTP to a real API server; `kubeloop/testing`'s
 * in-memory API server answers in process, with no socket, for reconciler unit tests.
 * A non-2xx answer throws a typed `ApiError`, whichever the transport.
 */
export interface ApiTransport {
  /** Where requests go, for messages (`https://host:port`, `memory://…`). */
  readonly server: string;
  /** The response timeout of ordinary calls, in milliseconds (streamed lists use it as their inactivity limit). */
  readonly requestTimeoutMs: number;
  /** How many times a dead connection replaced the pool (network transports only). */
  readonly poolReplacements?: number;
  request(request: HttpRequest): Promise<HttpResponse>;
  stream(request: StreamRequest): Promise<StreamResponse>;
  close(): Promise<void>;
}
