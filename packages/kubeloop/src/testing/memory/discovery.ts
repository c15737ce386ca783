/** An aggregated discovery document (apidiscovery.k8s.io/v2 `APIGroupDiscoveryList`), as served. */
export interface DiscoveryDocument {
  kind: string;
  apiVersion: string;
  metadata: object;
  items: {
    metadata: { name?: string; creationTimestamp?: null };
    versions: { version: string; resources: DiscoveredResource[]; freshness: string }[];
  }[];
}

export interface DiscoveredResource {
  resource: string;
  responseKind: { group: string; version: string; kind: string };
  scope: string;
  singularResource: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: { subresource: string; responseKind: object; verbs: string[] }[];
}
