// The names of the manager's metrics Service and certificate Secret, which the manifests, the
// scrape configuration, the alerts and the dashboard must agree on.

/** The Secret the manager keeps its metrics certificate and CA in (when none is mounted); scrapers trust its `ca.crt`. */
export function metricsCertSecret(name: string): string {
  return `${name}-metrics-self-issued`;
}

export function metricsServiceName(name: string): string {
  return `${name}-metrics`;
}
