import { type Link, type Span, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import type { KubeObject } from "../client/index.js";
import { redactError, redactSecrets } from "../resources/index.js";

/**
 * A span per reconcile (`reconcile <controller>`), linked to the change that caused it when the
 * object names one, and ended with the reconcile's outcome.
 */

const tracer = trace.getTracer("kubeloop");

/**
 * KEP-5915's annotation: whoever changed the object may leave that change's W3C `traceparent`
 * here; the reconcile it causes links to it (a link, not a parent: one change can cause many
 * reconciles, and a reconcile answers many changes).
 */
export const TRACEPARENT_ANNOTATION = "tracing.k8s.io/traceparent";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span link to the change recorded in the object's traceparent annotation, if it has a valid one. */
function linksOf(object: KubeObject): Link[] {
  const match = TRACEPARENT.exec(object.metadata?.annotations?.[TRACEPARENT_ANNOTATION] ?? "");
  if (!match || /^0+$/.test(match[1] ?? "0") || /^0+$/.test(match[2] ?? "0")) return [];
  const flags = Number.parseInt(match[3] ?? "0", 16) & TraceFlags.SAMPLED;
  return [
    { context: { traceId: match[1] ?? "", spanId: match[2] ?? "", traceFlags: flags, isRemote: true } },
  ];
}

/** What the span of one reconcile is named for. */
export interface SpanSubject {
  controller: string;
  kind: string;
  namespace: string | undefined;
  name: string;
  reconcileId: string;
  object: KubeObject;
}

/**
 * Runs `body` in the reconcile's active span; `body` gets the ids to put in its log lines (when
 * tracing records) and the span, which it ends with {@link endSpan}.
 */
export function inReconcileSpan<R>(
  subject: SpanSubject,
  body: (span: Span, ids: { trace_id: string; span_id: string } | undefined) => Promise<R>,
): Promise<R> {
  return tracer.startActiveSpan(
    `reconcile ${subject.controller}`,
    { links: linksOf(subject.object) },
    (span) => {
      span.setAttributes({
        "k8s.controller": subject.controller,
        "k8s.namespace": subject.namespace ?? "",
        "k8s.name": subject.name,
        "k8s.kind": subject.kind,
        "kubeloop.reconcile_id": subject.reconcileId,
      });
      const traced = span.isRecording() ? span.spanContext() : undefined;
      return body(span, traced ? { trace_id: traced.traceId, span_id: traced.spanId } : undefined);
    },
  );
}

/** Ends the span: an error status and the (redacted) exception when the reconcile failed. */
export function endSpan(span: Span, error: unknown): void {
  if (error !== undefined) {
    // Secrets the operator registered never reach traces, logs, events or conditions.
    span.recordException(redactError(error) as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: redactSecrets((error as Error).message ?? "") });
  }
  span.end();
}
