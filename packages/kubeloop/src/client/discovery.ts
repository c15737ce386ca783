import { UnknownKind } from "./errors.js";
import type { Transport } from "./transport.js";

/**
 * Discovery and REST mapping: which resource (plural), scope and subresources a kind has. Read in
 * two requests with aggregated discovery (apidiscovery.k8s.io/v2, GA since Kubernetes 1.30), cached,
 * and refreshed on a miss so kinds whose CRDs were installed later are found.
 */

export interface ResourceInfo {
  group: string;
  version: string;
  kind: string;
  /** The plural resource name used in URLs, e.g. `deployments`. */
  resource: string;
  namespaced: boolean;
  verbs: string[];
  subresources: string[];
}

interface DiscoveryList {
  items?: {
    metadata?: { name?: string };
    versions?: {
      version: string;
      resources?: {
        resource: string;
        responseKind?: { group?: string; version?: string; kind: string };
        scope: "Namespaced" | "Cluster";
        verbs?: string[];
        subresources?: { subresource: string }[];
      }[];
    }[];
  }[];
}

const AGGREGATED =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;q=0.9";
/** A kind that just missed is not looked up again for this long, so a typo cannot hammer the server. */
const MISS_MEMORY_MS = 1_000;

export class Discovery {
  private byKind = new Map<string, ResourceInfo>();
  private loaded = false;
  private refreshing: Promise<void> | undefined;
  /** When each unknown kind last missed. */
  private misses = new Map<string, number>();

  constructor(private readonly transport: Transport) {}

  /** The resource for `apiVersion` + `kind`; refreshes once on a miss, then throws {@link UnknownKind}. */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const key = `${apiVersion}/${kind}`;
    if (!this.loaded) await this.refresh();
    let info = this.byKind.get(key);
    if (!info && Date.now() - (this.misses.get(key) ?? 0) >= MISS_MEMORY_MS) {
      await this.refresh();
      info = this.byKind.get(key);
    }
    if (!info) {
      this.misses.set(key, Date.now());
      throw new UnknownKind(
        `The API server does not serve kind ${kind} in ${apiVersion}. If it is a custom resource, is its CRD installed (and established)?`,
      );
    }
    return info;
  }

  /** Forgets everything; the next lookup reads discovery again. */
  invalidate(): void {
    this.loaded = false;
  }

  /** Reads discovery now (concurrent callers share one refresh). */
  refresh(): Promise<void> {
    this.refreshing ??= this.load().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async load(): Promise<void> {
    const [core, groups] = await Promise.all([
      this.transport.request({ method: "GET", path: "/api", accept: AGGREGATED }),
      this.transport.request({ method: "GET", path: "/apis", accept: AGGREGATED }),
    ]);
    const next = new Map<string, ResourceInfo>();
    for (const list of [core.body, groups.body] as DiscoveryList[]) {
      for (const group of list.items ?? []) {
        const groupName = group.metadata?.name ?? "";
        for (const version of group.versions ?? []) {
          for (const resource of version.resources ?? []) {
            const kind = resource.responseKind?.kind;
            if (!kind) continue;
            const apiVersion = groupName ? `${groupName}/${version.version}` : version.version;
            next.set(`${apiVersion}/${kind}`, {
              group: groupName,
              version: version.version,
              kind,
              resource: resource.resource,
              namespaced: resource.scope === "Namespaced",
              verbs: resource.verbs ?? [],
              subresources: (resource.subresources ?? []).map((s) => s.subresource),
            });
          }
        }
      }
    }
    this.byKind = next;
    this.loaded = true;
  }
}
