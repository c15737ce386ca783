import { context, propagation, trace } from "@opentelemetry/api";
import type { Logger } from "pino";

/**
 * Traces that leave the process. kubeloop creates spans through the OpenTelemetry API (one per
 * reconcile, one per API call beneath it, one per webhook review); without an SDK they are no-ops.
 * When OpenTelemetry's standard environment names an OTLP endpoint, the manager starts the SDK:
 * spans are batched and sent as OTLP/HTTP (JSON) by the official exporter, W3C trace context is
 * propagated, and the async context follows a reconcile through every `await`, so its API calls
 * are its children.
 *
 * Read from the environment (OpenTelemetry's names, so a collector's docs apply as they are):
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (default
 * `parentbased_always_on`), `OTEL_EXPORTER_OTLP_HEADERS`; `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` turn it off.
 *
 * Unset, nothing is imported (the SDK and exporter are loaded with `import()` only when needed)
 * and spans cost what the API's no-op does. A malformed endpoint is a warning, and tracing stays
 * off; an unreachable one is a warning the first time an export fails (later ones are logged at
 * debug): exports run in the background and never hold up a reconcile.
 */

/** The running SDK; `flush()` sends the spans still buffered. */
export interface Tracing {
  readonly endpoint: string;
  flush(): Promise<void>;
}

/**
 * The SDK is process-wide and started once: tracers obtained through the API keep the provider
 * they first saw, so a second SDK would never get their spans. A second manager in the process
 * (tests) shares the first one's.
 */
let running: Promise<Tracing | undefined> | undefined;

/** How long a manager's shutdown waits for the last batch to be sent. */
const FLUSH_TIMEOUT_MS = 5_000;

/**
 * Starts the OpenTelemetry SDK if the environment names an OTLP endpoint (once per process: later
 * calls get the same); undefined otherwise. An application that installs its own SDK first keeps
 * it (a tracer provider already set wins).
 *
 * @example
 * ```ts
 * // OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318 OTEL_SERVICE_NAME=nginx-operator
 * const tracing = await startTracing(logger, { serviceName: "nginx-operator" });
 * // … on shutdown:
 * await tracing?.flush();
 * ```
 */
export function startTracing(
  logger: Logger,
  options: { serviceName?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Tracing | undefined> {
  const env = options.env ?? process.env;
  const configured = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!configured || env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none")
    return Promise.resolve(undefined);
  running ??= start(logger, configured, options.serviceName, env)
    .catch((error: unknown) => {
      // Tracing is an aid: an SDK that cannot start is a warning, never a manager that does not.
      logger.warn({ err: error }, `could not start OpenTelemetry tracing: ${(error as Error).message}`);
      return undefined;
    })
    .then((tracing) => {
      if (!tracing) running = undefined; // not started: the next manager tries (and warns) again
      return tracing;
    });
  return running;
}

async function start(
  logger: Logger,
  configured: string,
  serviceName: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<Tracing | undefined> {
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    : "OTEL_EXPORTER_OTLP_ENDPOINT";
  let url: URL;
  try {
    url = new URL(configured);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    logger.warn(
      { [variable]: configured },
      `${variable}="${configured}" is not an http(s) URL (e.g. http://otel-collector:4318): traces are not exported`,
    );
    return undefined;
  }
  // The per-signal variable is the full URL; the general one gets /v1/traces appended (the spec's rule).
  const endpoint =
    variable === "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" ? url.href : `${url.href.replace(/\/$/, "")}/v1/traces`;

  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources, core, hooks] =
    await Promise.all([
      import("@opentelemetry/sdk-trace-base"),
      import("@opentelemetry/exporter-trace-otlp-http"),
      import("@opentelemetry/resources"),
      import("@opentelemetry/core"),
      import("@opentelemetry/context-async-hooks"),
    ]);

  let warned = false;
  core.setGlobalErrorHandler((error) => {
    const message = error instanceof Error ? error.message : String(error);
    if (warned) {
      logger.debug({ err: error }, `trace export failed: ${message}`);
      return;
    }
    warned = true;
    logger.warn(
      { err: error, endpoint },
      `trace export to ${endpoint} failed (${message}); spans are dropped until it answers (further failures at debug level)`,
    );
  });

  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ "service.name": serviceName ?? "kubeloop-operator" }))
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults.
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const exporter = new OTLPTraceExporter({ url: endpoint });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  if (!trace.setGlobalTracerProvider(provider)) {
    logger.info("an OpenTelemetry tracer provider is already installed: keeping it");
    await provider.shutdown();
    return undefined;
  }
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  logger.info({ endpoint }, "exporting traces (OTLP/HTTP)");
  return {
    endpoint,
    async flush() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
      });
      await Promise.race([provider.forceFlush().catch(() => {}), timeout]);
      clearTimeout(timer);
    },
  };
}
