import type { Registry } from "prom-client";

/** An informer's health as `kubeloop_informer_watch_healthy` shows it. */
export interface InformerReading {
  kind: string;
  /** Empty for a cluster-wide informer. */
  namespace: string;
  healthy: boolean;
  /** Objects in its cache (`kubeloop_informer_objects`). */
  objects?: number;
  /** Roughly the bytes they hold (`kubeloop_informer_bytes`; see `Informer.approximateBytes`). */
  bytes?: number;
}

/**
 * `kubeloop_informer_objects` and `kubeloop_informer_bytes` by `kind` and `namespace`, read from
 * the manager's informers when scraped (controller-runtime #3182 asks for the same: which informer
 * holds the memory). Informers of one kind and namespace (other selectors, metadata-only) are
 * summed: the question is what a kind costs, not which selector.
 */
export function informerSizeGauges(
  Gauge: typeof import("prom-client").Gauge,
  registers: Registry[],
  read: () => readonly InformerReading[],
): void {
  const labelNames = ["kind", "namespace"] as const;
  const gauge = (name: string, help: string, value: (reading: InformerReading) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const reading of read()) {
          const n = value(reading);
          if (n !== undefined) this.inc({ kind: reading.kind, namespace: reading.namespace }, n);
        }
      },
    });
  gauge(
    "kubeloop_informer_objects",
    "Objects in the informer's cache, by kind and namespace ('namespace' empty for a cluster-wide informer).",
    (reading) => reading.objects,
  );
  gauge(
    "kubeloop_informer_bytes",
    "Approximate bytes of the informer's cached objects: their count times the mean JSON size of a sample of them.",
    (reading) => reading.bytes,
  );
}
