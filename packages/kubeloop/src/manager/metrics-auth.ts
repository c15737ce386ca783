import { createHash } from "node:crypto";
import type { Client } from "../client/index.js";

/**
 * Who may read `/metrics`: the Kubernetes API decides, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` asks it. The bearer token is checked with a
 * TokenReview; the user it names must be allowed, by a SubjectAccessReview, the lower-cased HTTP
 * verb on the non-resource URL (`get` on `/metrics`: the `metrics-reader` ClusterRole that
 * `kubeloop generate` writes). Answers are cached so a scrape every 15 s costs the API nothing
 * most of the time: tokens 1 minute, allow 5 minutes, deny 30 seconds (controller-runtime's TTLs).
 *
 * No token → 401; a token the API does not accept → 401; not allowed → 403; a review that fails
 * (the API unreachable, or this manager not allowed to create reviews) → 500, naming why.
 */

/** controller-runtime's TTL of a TokenReview's answer. */
export const TOKEN_REVIEW_TTL_MS = 60_000;
/** controller-runtime's TTL of an allowing SubjectAccessReview. */
export const ALLOW_TTL_MS = 5 * 60_000;
/** controller-runtime's TTL of a denying one: a grant just added is seen within 30 s. */
export const DENY_TTL_MS = 30_000;
/** controller-runtime's timeout of one review. */
export const REVIEW_TIMEOUT_MS = 10_000;
/**
 * Entries kept per cache: a scraper or two use a token or two; the bound keeps a caller who sends
 * random tokens from growing memory (the oldest entries go first).
 */
const MAX_CACHE_ENTRIES = 1_000;

/** How a request was judged. */
export type MetricsAccess =
  | { allowed: true; user: string }
  | { allowed: false; status: 401 | 403 | 500; reason: string };

/** How long TokenReview and SubjectAccessReview answers are cached, and how long a review may take. */
export interface MetricsAuthOptions {
  /** How long a token's TokenReview answer is reused. Default {@link TOKEN_REVIEW_TTL_MS} (1 minute). */
  tokenTtlMs?: number;
  /** How long an allowing SubjectAccessReview is reused. Default {@link ALLOW_TTL_MS} (5 minutes). */
  allowTtlMs?: number;
  /** How long a denial is reused: how soon a new RoleBinding takes effect. Default {@link DENY_TTL_MS} (30 s). */
  denyTtlMs?: number;
  /** How long one review may take before the scrape gets a 500. Default {@link REVIEW_TIMEOUT_MS} (10 s). */
  reviewTimeoutMs?: number;
  /** The clock of the caches (tests). */
  now?: () => number;
}

interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/**
 * Judges requests by their `Authorization: Bearer` header through the API's reviews.
 *
 * @example
 * ```ts
 * const auth = new MetricsAuthorizer(client);
 * const access = await auth.check(request.headers.authorization, "GET", "/metrics");
 * if (!access.allowed) response.writeHead(access.status).end(access.reason);
 * ```
 */
export class MetricsAuthorizer {
  private readonly tokens: TtlCache<UserInfo | null>;
  private readonly decisions: TtlCache<boolean>;
  private readonly options: MetricsAuthOptions;

  constructor(
    private readonly client: Client,
    options: MetricsAuthOptions = {},
  ) {
    this.options = options;
    const now = options.now ?? Date.now;
    this.tokens = new TtlCache(now);
    this.decisions = new TtlCache(now);
  }

  /** Judges one request: its `Authorization` header, HTTP method and URL path. */
  async check(authorization: string | undefined, method: string, path: string): Promise<MetricsAccess> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) return { allowed: false, status: 401, reason: "Unauthorized: a bearer token is required" };
    let user: UserInfo | null;
    try {
      user = await this.authenticate(token);
    } catch (error) {
      return { allowed: false, status: 500, reason: `TokenReview failed: ${(error as Error).message}` };
    }
    if (!user) return { allowed: false, status: 401, reason: "Unauthorized: the token was not accepted" };
    const verb = method.toLowerCase();
    let allowed: boolean;
    try {
      allowed = await this.authorize(user, verb, path);
    } catch (error) {
      return {
        allowed: false,
        status: 500,
        reason: `SubjectAccessReview failed: ${(error as Error).message}`,
      };
    }
    if (!allowed)
      return {
        allowed: false,
        status: 403,
        reason: `Forbidden: user "${user.username}" may not ${verb} ${path} (grant it the metrics-reader ClusterRole)`,
      };
    return { allowed: true, user: user.username };
  }

  private async authenticate(token: string): Promise<UserInfo | null> {
    const key = createHash("sha256").update(token).digest("hex");
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached;
    const { body } = await this.client.transport.request({
      method: "POST",
      path: "/apis/authentication.k8s.io/v1/tokenreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      signal: AbortSignal.timeout(this.options.reviewTimeoutMs ?? REVIEW_TIMEOUT_MS),
    });
    const status = (body as { status?: { authenticated?: boolean; user?: UserInfo } }).status;
    const user = status?.authenticated && status.user?.username ? status.user : null;
    this.tokens.set(key, user, this.options.tokenTtlMs ?? TOKEN_REVIEW_TTL_MS);
    return user;
  }

  private async authorize(user: UserInfo, verb: string, path: string): Promise<boolean> {
    const key = JSON.stringify([user.username, user.uid, user.groups, verb, path]);
    const cached = this.decisions.get(key);
    if (cached !== undefined) return cached;
    const { body } = await this.client.transport.request({
      method: "POST",
      path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups ? { groups: user.groups } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
          nonResourceAttributes: { path, verb },
        },
      },
      signal: AbortSignal.timeout(this.options.reviewTimeoutMs ?? REVIEW_TIMEOUT_MS),
    });
    const allowed = (body as { status?: { allowed?: boolean } }).status?.allowed === true;
    this.decisions.set(
      key,
      allowed,
      allowed ? (this.options.allowTtlMs ?? ALLOW_TTL_MS) : (this.options.denyTtlMs ?? DENY_TTL_MS),
    );
    return allowed;
  }
}

/** A map whose entries expire, bounded to {@link MAX_CACHE_ENTRIES} (oldest dropped first). */
class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(private readonly now: () => number) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (this.entries.size >= MAX_CACHE_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, expires: this.now() + ttlMs });
  }
}
