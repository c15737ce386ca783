import type {
  ApiTransport,
  HttpRequest,
  HttpResponse,
  StreamRequest,
  StreamResponse,
} from "../../client/index.js";
import { apiErrorFor } from "../../client/internal.js";
import { clone } from "./clone.js";
import { StatusError } from "./errors.js";
import type { MemoryHandler } from "./handler.js";
import type { UserInfo } from "./rbac.js";

let servers = 0;

/**
 * The client's transport to a `MemoryApiServer`: requests go to the server's handler in
 * process (no socket, no serialisation beyond a JSON copy), failures come back as the same typed
 * errors (`NotFound`, `Conflict`, …) the HTTP transport throws.
 */
export class MemoryTransport implements ApiTransport {
  readonly server = `memory://apiserver-${++servers}`;
  readonly requestTimeoutMs = 30_000;

  constructor(
    private readonly api: MemoryHandler,
    private readonly userAgent: string,
    /** Whom requests act as; undefined: the administrator. */
    private readonly user?: UserInfo,
  ) {}

  async request(request: HttpRequest): Promise<HttpResponse> {
    try {
      // The body as the wire would carry it: JSON drops `undefined` fields, so patches and
      // status writes built with optional properties mean here what they mean to a real server.
      const response = await this.api.handle({
        ...request,
        ...(request.body === undefined ? {} : { body: clone(request.body) }),
        userAgent: this.userAgent,
        ...(this.user ? { user: this.user } : {}),
      });
      // A copy, as over the wire: the caller may change what it got.
      return { ...response, body: clone(response.body) };
    } catch (error) {
      throw asApiError(error, request);
    }
  }

  async stream(request: StreamRequest): Promise<StreamResponse> {
    try {
      return await this.api.stream(this.user ? { ...request, user: this.user } : request);
    } catch (error) {
      throw asApiError(error, request);
    }
  }

  async close(): Promise<void> {}
}

function asApiError(error: unknown, request: HttpRequest): unknown {
  if (!(error instanceof StatusError)) return error;
  return apiErrorFor(error.status.code, error.status, `${request.method} ${request.path}`);
}
