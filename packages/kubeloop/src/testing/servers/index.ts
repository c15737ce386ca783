/**
 * `kubeloop/testing/servers`: the other servers an operator's tests run beside a control plane,
 * on loopback and from cached binaries: PostgreSQL and Prometheus (with promtool and the Prometheus
 * adapter) for operators that manage or watch them, OLM for a bundle's install path, Karmada for
 * multi-cluster placement, and a forward proxy for clients behind one.
 *
 * @example
 * ```ts
 * import { PostgresServer } from "kubeloop/testing/servers";
 *
 * const pg = await new PostgresServer().start();
 * try {
 *   const version = await pg.psql("select version()"); // the operator under test connects to pg.url()
 * } finally {
 *   await pg.stop();
 * }
 * ```
 */
export {
  KARMADA_REGION_LABEL,
  type KarmadaComponentInfo,
  type KarmadaComponentName,
  type KarmadaMember,
  type KarmadaMemberOptions,
  KarmadaPlane,
  type KarmadaPlaneOptions,
} from "./karmada/index.js";
export {
  type CatalogBundle,
  type CatalogOptions,
  catalogImage,
  installOlm,
  type OlmInstall,
  type OlmPlane,
  olmAssets,
  olmImage,
  publishCatalog,
  pushToPlaneRegistry,
  renderCatalog,
} from "./olm/index.js";
export {
  locatePostgres,
  POSTGRES_BIN_ENV,
  POSTGRES_BINARIES,
  PostgresServer,
  PostgresServerError,
  type PostgresServerOptions,
} from "./postgres.js";
export {
  findPrometheusBinary,
  type PrometheusAlert,
  PrometheusError,
  type PrometheusSample,
  PrometheusServer,
  type PrometheusServerOptions,
  type PromtoolResult,
  promtool,
} from "./prometheus.js";
export {
  type AdapterOptions,
  type AdapterPlane,
  installPrometheusAdapter,
  PROMETHEUS_ADAPTER_VERSION,
  prometheusAdapterBinary,
} from "./prometheus-adapter.js";
export { startTunnelProxy, type TunnelProxy, type TunnelProxyOptions } from "./proxy.js";
