import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

// What the autopilot test watches the operator with: its reconcile spans (OTLP, as the manager
// exports them) as a journal of who reconciled what when, and a sampler of the HPA run.

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string };
}
interface OtlpSpan {
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
}
interface OtlpExport {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

/** One reconcile: which controller, which object, which pod, from when to when (ns since the epoch). */
export interface Reconcile {
  controller: string;
  key: string;
  pod: string;
  start: bigint;
  end: bigint;
}

/**
 * OpenTelemetry's JS SDK anchors each span's times on `Date.now()` (whole milliseconds) plus a
 * monotonic offset, so two spans' times can be off by up to a millisecond against each other: a
 * reconcile that starts as the previous one ends can look as if it began a fraction of a
 * millisecond earlier. A handover between replicas takes several API round trips, far above this.
 */
const CLOCK_SLACK_NS = 2_000_000n;

const attribute = (attributes: OtlpAttribute[], key: string) =>
  attributes.find((a) => a.key === key)?.value.stringValue ?? "";

/**
 * An OTLP/HTTP (JSON) receiver on `host`, which the operator pods export their spans to: every
 * `reconcile …` span becomes a {@link Reconcile}. Pods name themselves by the resource attribute
 * `k8s.pod.name`.
 */
export class SpanJournal {
  readonly reconciles: Reconcile[] = [];
  private server: Server | undefined;
  private port = 0;

  // A plain field, not a parameter property: the bench scripts import this file with Node's type
  // stripping, which does not rewrite parameter properties.
  private readonly host: string;

  constructor(host: string) {
    this.host = host;
  }

  get endpoint(): string {
    return `http://${this.host}:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        try {
          this.add(JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport);
          response.writeHead(200, { "content-type": "application/json" }).end("{}");
        } catch {
          response.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, this.host, resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => (this.server ? this.server.close(resolve) : resolve(undefined)));
  }

  private add(body: OtlpExport): void {
    for (const resource of body.resourceSpans ?? []) {
      const pod = attribute(resource.resource.attributes, "k8s.pod.name");
      for (const scope of resource.scopeSpans)
        for (const span of scope.spans) {
          if (!span.name.startsWith("reconcile ")) continue;
          this.reconciles.push({
            controller: attribute(span.attributes, "k8s.controller"),
            key: `${attribute(span.attributes, "k8s.namespace")}/${attribute(span.attributes, "k8s.name")}`,
            pod,
            start: BigInt(span.startTimeUnixNano),
            end: BigInt(span.endTimeUnixNano),
          });
        }
    }
  }

  /**
   * Pairs of reconciles of one object by one controller that overlap in time by more than the
   * spans' clock allows: two replicas at
   * once (a replica's own queue never runs a key twice at once). Empty when the handover held.
   */
  overlaps(): [Reconcile, Reconcile][] {
    const byKey = new Map<string, Reconcile[]>();
    for (const r of this.reconciles) {
      const id = `${r.controller} ${r.key}`;
      byKey.set(id, [...(byKey.get(id) ?? []), r]);
    }
    const found: [Reconcile, Reconcile][] = [];
    for (const list of byKey.values()) {
      list.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
      let latest: Reconcile | undefined;
      for (const r of list) {
        if (latest && r.start < latest.end - CLOCK_SLACK_NS) found.push([latest, r]);
        if (!latest || r.end > latest.end) latest = r;
      }
    }
    return found;
  }

  /** The pods that reconciled, and how many objects each. */
  podsThatReconciled(): Map<string, number> {
    const objects = new Map<string, Set<string>>();
    for (const r of this.reconciles) objects.set(r.pod, (objects.get(r.pod) ?? new Set()).add(r.key));
    return new Map([...objects].map(([pod, keys]) => [pod, keys.size]));
  }
}

/** One sample of the HPA run. */
export interface Sample {
  /** Seconds since the run began. */
  t: number;
  phase: string;
  /** The Deployment's ready replicas, and what the HPA wants. */
  replicas: number;
  desired: number;
  /** The HPA's reading of the metric (average per pod). */
  metric: number | null;
  /** Keys waiting in all replicas' queues. */
  queueDepth: number | null;
  /** p90 of reconcile time and of queue wait over the last 15 s, in ms. */
  reconcileP90Ms: number | null;
  queueWaitP90Ms: number | null;
  /** Reconciles a second, all replicas. */
  reconcileRate: number | null;
}
