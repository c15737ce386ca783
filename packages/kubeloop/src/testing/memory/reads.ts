import { fieldValues } from "./builtins.js";
import { badRequest, gone, notFound } from "./errors.js";
import { apiVersionOf } from "./kinds.js";
import { keyOf, type Obj, type Route } from "./objects.js";
import { fieldMatcher, labelMatcher } from "./selectors.js";
import type { MemoryStore } from "./store.js";
import { type StoredEvent, WatchStream } from "./watch.js";

// Reads: get, list (pages, continue tokens, a past revision, metadata only) and watch.

export function read(store: MemoryStore, route: Route): Obj {
  const stored = store.bucket(route.kind).get(keyOf(route.namespace, route.name ?? ""));
  if (!stored) throw notFound(route.kind.group, route.kind.resource, route.name ?? "");
  return store.output(route.kind, stored);
}

export function list(
  store: MemoryStore,
  route: Route,
  query: Record<string, unknown>,
  accept: string | undefined,
): Obj {
  const { kind } = route;
  const labels = labelMatcher(query.labelSelector as string | undefined);
  const fields = fieldMatcher(
    query.fieldSelector as string | undefined,
    new Set(["metadata.name", "metadata.namespace", ...kind.selectableFields]),
    !kind.crd && kind.selectableFields.length === 0,
  );
  let revision = store.revision;
  let start = "";
  if (query.continue) {
    const token = decodeContinue(String(query.continue));
    revision = token.rv;
    start = token.start;
    if (revision <= store.compactedAt)
      throw gone(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
      );
  } else if (query.resourceVersion && query.resourceVersionMatch === "Exact") {
    revision = Number(query.resourceVersion);
    if (revision <= store.compactedAt) throw gone(`The resourceVersion for the provided list is too old.`);
  }
  const bucket = revision === store.revision ? store.bucket(kind) : store.snapshot(kind, revision);
  const matching = [...bucket.entries()]
    .filter(([key]) => key > start)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .filter(([, o]) => !route.namespace || o.metadata.namespace === route.namespace)
    .filter(([, o]) => labels(o.metadata.labels ?? {}) && fields(fieldValues(o, kind.selectableFields)));
  const limit = Number(query.limit ?? 0);
  const page = limit > 0 ? matching.slice(0, limit) : matching;
  const more = limit > 0 && matching.length > limit;
  const metadataOnly = accept?.includes("as=PartialObjectMetadataList");
  const items = page.map(([, o]) => {
    const object = store.output(kind, o);
    if (metadataOnly)
      return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
    // Typed lists of built-in kinds leave out each item's apiVersion and kind; custom resources keep them.
    if (!kind.crd) {
      delete object.apiVersion;
      delete object.kind;
    }
    return object;
  });
  const last = page.at(-1)?.[0];
  const metadata: Obj = { resourceVersion: String(revision) };
  if (kind.crd) metadata.continue = "";
  if (more && last !== undefined) {
    metadata.continue = encodeContinue(revision, last);
    if (!query.labelSelector && !query.fieldSelector)
      metadata.remainingItemCount = matching.length - page.length;
  }
  return metadataOnly
    ? { kind: "PartialObjectMetadataList", apiVersion: "meta.k8s.io/v1", metadata, items }
    : { kind: `${kind.kind}List`, apiVersion: apiVersionOf(kind), metadata, items };
}

export function openWatch(
  store: MemoryStore,
  route: Route,
  query: Record<string, unknown>,
  accept: string | undefined,
): WatchStream {
  const { kind } = route;
  const watch = new WatchStream(
    {
      resource: `${kind.group}/${kind.resource}`,
      namespace: route.namespace,
      labels: labelMatcher(query.labelSelector as string | undefined),
      fields: fieldMatcher(
        query.fieldSelector as string | undefined,
        new Set(["metadata.name", "metadata.namespace", ...kind.selectableFields]),
        !kind.crd && kind.selectableFields.length === 0,
      ),
      valuesOf: (o) => ({
        labels: ((o.metadata as Obj).labels as Record<string, string>) ?? {},
        fields: fieldValues(o, kind.selectableFields),
      }),
      allowBookmarks: query.allowWatchBookmarks === true || query.allowWatchBookmarks === "true",
      metadataOnly: Boolean(accept?.includes("as=PartialObjectMetadata")),
      apiVersion: apiVersionOf(kind),
      kind: kind.kind,
    },
    (w) => store.watches.delete(w),
  );
  const rv = query.resourceVersion === undefined ? "" : String(query.resourceVersion);
  const initial = query.sendInitialEvents === true || query.sendInitialEvents === "true";
  if (rv === "" || rv === "0" || initial) {
    const state = list(
      store,
      route,
      { labelSelector: query.labelSelector, fieldSelector: query.fieldSelector },
      undefined,
    );
    for (const item of state.items as Obj[]) {
      item.apiVersion = apiVersionOf(kind);
      item.kind = kind.kind;
      watch.push("ADDED", item);
    }
    if (initial) watch.bookmark(store.revision, { "k8s.io/initial-events-end": "true" });
    store.watches.add(watch);
    return watch;
  }
  const from = Number(rv);
  if (from < store.compactedAt) {
    watch.error({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: `too old resource version: ${from} (${store.compactedAt})`,
      reason: "Expired",
      code: 410,
    });
    return watch;
  }
  for (let i = store.historyStart; i < store.history.length; i++) {
    const event = store.history[i] as StoredEvent;
    if (event.resourceVersion > from) watch.offer(store.outputEvent(kind, event));
  }
  store.watches.add(watch);
  return watch;
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start: `${start}\u0000` })).toString(
    "base64url",
  );
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, "base64url").toString()) as { rv: number; start: string };
    return {
      rv: parsed.rv,
      start: parsed.start.endsWith("\u0000") ? parsed.start.slice(0, -1) : parsed.start,
    };
  } catch {
    throw badRequest(`continue key is not valid: ${token}`);
  }
}
