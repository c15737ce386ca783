import type { ApiTransport } from "./api-transport.js";
import { UnknownKind } from "./errors.js";
import { groupOf, kindKeyOf, versionOf } from "./object-ref.js";

/**
 * Discovery and REST mapping: which resource (plural), scope and subresources a kind has. Read in
 * two requests with aggregated discovery (apidiscovery.k8s.io/v2, GA since Kubernetes 1.30; v2beta1
 * before), or group by group from the legacy documents when a server answers those instead; cached,
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

/** apidiscovery.k8s.io `APIGroupDiscoveryList` (v2, and the same shape in v2beta1). */
interface DiscoveryList {
  kind?: string;
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

/** The legacy documents: `/api` (APIVersions), `/apis` (APIGroupList), `/apis/<g>/<v>` (APIResourceList). */
interface LegacyVersions {
  kind?: string;
  versions?: string[];
}
interface LegacyGroupList {
  kind?: string;
  groups?: { name: string; versions?: { groupVersion: string; version: string }[] }[];
}
interface LegacyResourceList {
  groupVersion?: string;
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}

/**
 * v2 is GA since Kubernetes 1.30; v2beta1 (same shape) is what 1.26–1.29 and some managed or
 * aggregated servers still answer; plain JSON gets the legacy documents, read group by group.
 */
const AGGREGATED =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;q=0.95," +
  "application/json;q=0.9";
const AGGREGATED_KIND = "APIGroupDiscoveryList";
/** A kind that just missed is not looked up again for this long, so a typo cannot hammer the server. */
const MISS_MEMORY_MS = 1_000;

export interface DiscoveryOptions {
  /**
   * Ask for aggregated discovery (default true). Servers that do not serve it answer with the legacy
   * documents, which are then read group by group either way; false asks for those directly.
   */
  aggregated?: boolean;
}

/**
 * The API server's discovery: which resource, scope and subresources each kind has. Loaded once
 * (aggregated discovery where served) and refreshed when a kind is not found.
 */
export class Discovery {
  private byKind = new Map<string, ResourceInfo>();
  private loaded = false;
  private refreshing: Promise<void> | undefined;
  /** When each unknown kind last missed. */
  private misses = new Map<string, number>();

  /** Group-versions whose legacy document could not be read at the last refresh, with the reason. */
  private failedGroupVersions = new Map<string, string>();

  constructor(
    private readonly transport: ApiTransport,
    private readonly options: DiscoveryOptions = {},
  ) {}

  /** The resource for `apiVersion` + `kind`; refreshes once on a miss, then throws {@link UnknownKind}. */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const key = kindKeyOf({ apiVersion, kind });
    let refreshed = false;
    if (!this.loaded) {
      await this.refresh();
      refreshed = true;
    }
    let info = this.byKind.get(key);
    if (!info && !refreshed && Date.now() - (this.misses.get(key) ?? 0) >= MISS_MEMORY_MS) {
      await this.refresh();
      refreshed = true;
      info = this.byKind.get(key);
    }
    if (!info) {
      // Remembered from the last read of discovery only: a caller asking more often than
      // MISS_MEMORY_MS must still see a kind installed since (a CRD that appears later).
      if (refreshed) this.misses.set(key, Date.now());
      const failure = this.failedGroupVersions.get(apiVersion);
      if (failure) {
        throw new UnknownKind(
          `Kind ${kind} in ${apiVersion} is unknown because the API server could not describe ${apiVersion}: ${failure}. ` +
            "If it is served by an aggregated API server (an APIService), check that the service is available.",
        );
      }
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
    const accept = this.options.aggregated === false ? "application/json" : AGGREGATED;
    const [core, groups] = await Promise.all([
      this.transport.request({ method: "GET", path: "/api", accept }),
      this.transport.request({ method: "GET", path: "/apis", accept }),
    ]);
    const next = new Map<string, ResourceInfo>();
    const failed = new Map<string, string>();
    for (const body of [core.body, groups.body]) {
      if ((body as DiscoveryList).kind === AGGREGATED_KIND) {
        for (const info of fromAggregated(body as DiscoveryList))
          next.set(kindKeyOf({ apiVersion: apiVersionOf(info), kind: info.kind }), info);
      } else {
        for (const info of await this.loadLegacy(body as LegacyVersions & LegacyGroupList, failed))
          next.set(kindKeyOf({ apiVersion: apiVersionOf(info), kind: info.kind }), info);
      }
    }
    this.byKind = next;
    this.failedGroupVersions = failed;
    this.loaded = true;
  }

  /** Reads one APIResourceList per group-version named by a legacy `/api` or `/apis` answer. */
  private async loadLegacy(
    body: LegacyVersions & LegacyGroupList,
    failed: Map<string, string>,
  ): Promise<ResourceInfo[]> {
    if (!Array.isArray(body.groups) && !Array.isArray(body.versions)) {
      // Neither format: guessing would make every kind "not served"; say what came back instead.
      throw new UnknownKind(
        `The API server's discovery answered neither aggregated discovery nor the legacy APIGroupList/APIVersions ` +
          `(got kind ${JSON.stringify(body.kind)}). Is the server URL a Kubernetes API server, not a proxy's page?`,
      );
    }
    const paths = body.groups
      ? body.groups.flatMap((group) => (group.versions ?? []).map((v) => `/apis/${v.groupVersion}`))
      : (body.versions ?? []).map((version) => `/api/${version}`);
    const lists = await Promise.all(
      paths.map(async (path) => {
        try {
          return (await this.transport.request({ method: "GET", path })).body as LegacyResourceList;
        } catch (error) {
          // One broken aggregated API (e.g. metrics.k8s.io down) must not hide every other group.
          failed.set(path.replace(/^\/apis?\//, ""), (error as Error).message);
          return undefined;
        }
      }),
    );
    return lists.flatMap((list) => (list ? fromLegacy(list) : []));
  }
}

function apiVersionOf(info: ResourceInfo): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** The resources of an aggregated discovery document. */
export function fromAggregated(list: DiscoveryList): ResourceInfo[] {
  const found: ResourceInfo[] = [];
  for (const group of list.items ?? []) {
    const groupName = group.metadata?.name ?? "";
    for (const version of group.versions ?? []) {
      for (const resource of version.resources ?? []) {
        const kind = resource.responseKind?.kind;
        if (!kind) continue;
        found.push({
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
  return found;
}

/** The resources of one legacy APIResourceList; `deployments/status` entries become subresources. */
export function fromLegacy(list: LegacyResourceList): ResourceInfo[] {
  const groupVersion = list.groupVersion ?? "";
  const group = groupOf(groupVersion);
  const version = versionOf(groupVersion);
  const subresources = new Map<string, string[]>();
  for (const entry of list.resources ?? []) {
    const [resource, subresource] = entry.name.split("/");
    if (resource && subresource)
      subresources.set(resource, [...(subresources.get(resource) ?? []), subresource]);
  }
  return (list.resources ?? [])
    .filter((entry) => !entry.name.includes("/"))
    .map((entry) => ({
      group,
      version,
      kind: entry.kind,
      resource: entry.name,
      namespaced: entry.namespaced,
      verbs: entry.verbs ?? [],
      subresources: subresources.get(entry.name) ?? [],
    }));
}
