/**
 * The names `kubeloop/testing` exported in 0.1 and that moved to an entry point of their own in 0.2
 * (`kubeloop/testing/cluster`, `/faults`, `/servers`, `/assets`): aliases of the moved names,
 * deprecated, kept for one minor release as CONTRIBUTING.md promises and removed in 0.3. Each is the
 * same class, function or value as the new entry point's (`instanceof` holds across the two).
 * docs/releases.md has the table of what moved where.
 */
import * as assets from "./assets/index.js";
import * as cluster from "./cluster/index.js";
import * as faults from "./faults/index.js";
import * as servers from "./servers/index.js";

/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type AssetSourcePolicy = assets.AssetSourcePolicy;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type AssetSources = assets.AssetSources;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type BinaryName = assets.BinaryName;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const buildComponent: typeof assets.buildComponent = assets.buildComponent;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type BuildInfo = assets.BuildInfo;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type BuildOptions = assets.BuildOptions;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type ComponentName = assets.ComponentName;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const COMPONENTS: typeof assets.COMPONENTS = assets.COMPONENTS;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const componentsFor: typeof assets.componentsFor = assets.componentsFor;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const defaultAssetsRoot: typeof assets.defaultAssetsRoot = assets.defaultAssetsRoot;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const DownloadError: typeof assets.DownloadError = assets.DownloadError;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type DownloadError = assets.DownloadError;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const ensureAssets: typeof assets.ensureAssets = assets.ensureAssets;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type EnsureAssetsOptions = assets.EnsureAssetsOptions;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const ETCD_VERSION: typeof assets.ETCD_VERSION = assets.ETCD_VERSION;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const KARMADA_VERSION: typeof assets.KARMADA_VERSION = assets.KARMADA_VERSION;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const KUBERNETES_VERSION: typeof assets.KUBERNETES_VERSION = assets.KUBERNETES_VERSION;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const KUBERNETES_VERSION_ENV: typeof assets.KUBERNETES_VERSION_ENV = assets.KUBERNETES_VERSION_ENV;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const KWOK_VERSION: typeof assets.KWOK_VERSION = assets.KWOK_VERSION;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const locateBinary: typeof assets.locateBinary = assets.locateBinary;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const MIRROR_ENV: typeof assets.MIRROR_ENV = assets.MIRROR_ENV;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const obtainComponent: typeof assets.obtainComponent = assets.obtainComponent;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type ObtainOptions = assets.ObtainOptions;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const OLDEST_KUBERNETES_VERSION: typeof assets.OLDEST_KUBERNETES_VERSION =
  assets.OLDEST_KUBERNETES_VERSION;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const packAssets: typeof assets.packAssets = assets.packAssets;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type PackOptions = assets.PackOptions;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type PackResult = assets.PackResult;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const readBuildInfo: typeof assets.readBuildInfo = assets.readBuildInfo;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export type ResolvedAssets = assets.ResolvedAssets;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const resolveKubernetesVersion: typeof assets.resolveKubernetesVersion =
  assets.resolveKubernetesVersion;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const SOURCE_ENV: typeof assets.SOURCE_ENV = assets.SOURCE_ENV;
/** Moved to `kubeloop/testing/assets`. @deprecated Import it from there; this alias goes in 0.3. */
export const SUPPORTED_KUBERNETES_VERSIONS: typeof assets.SUPPORTED_KUBERNETES_VERSIONS =
  assets.SUPPORTED_KUBERNETES_VERSIONS;
/** Moved to `kubeloop/testing/cluster`. @deprecated Import it from there; this alias goes in 0.3. */
export const OperatorE2e: typeof cluster.OperatorE2e = cluster.OperatorE2e;
/** Moved to `kubeloop/testing/cluster`. @deprecated Import it from there; this alias goes in 0.3. */
export type OperatorE2e = cluster.OperatorE2e;
/** Moved to `kubeloop/testing/cluster`. @deprecated Import it from there; this alias goes in 0.3. */
export type OperatorE2eOptions = cluster.OperatorE2eOptions;
/** Moved to `kubeloop/testing/cluster`. @deprecated Import it from there; this alias goes in 0.3. */
export type PodRun = cluster.PodRun;
/** Moved to `kubeloop/testing/cluster`. @deprecated Import it from there; this alias goes in 0.3. */
export const runPod: typeof cluster.runPod = cluster.runPod;
/** Moved to `kubeloop/testing/cluster`. @deprecated Import it from there; this alias goes in 0.3. */
export type RunPodOptions = cluster.RunPodOptions;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const ChaosError: typeof faults.ChaosError = faults.ChaosError;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type ChaosError = faults.ChaosError;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type ChaosPlane = faults.ChaosPlane;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type ContainerKillFault = faults.ContainerKillFault;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type CutDirection = faults.CutDirection;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const cutNetwork: typeof faults.cutNetwork = faults.cutNetwork;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const deletePod: typeof faults.deletePod = faults.deletePod;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type Fault = faults.Fault;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type FaultKind = faults.FaultKind;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type FaultProxy = faults.FaultProxy;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type FaultProxyOptions = faults.FaultProxyOptions;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type FaultProxyStats = faults.FaultProxyStats;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const fillVolume: typeof faults.fillVolume = faults.fillVolume;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const killContainer: typeof faults.killContainer = faults.killContainer;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type PodDeleteFault = faults.PodDeleteFault;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type PodTarget = faults.PodTarget;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type Recovery = faults.Recovery;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type RecoveryOptions = faults.RecoveryOptions;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const startFaultProxy: typeof faults.startFaultProxy = faults.startFaultProxy;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export const stopNode: typeof faults.stopNode = faults.stopNode;
/** Moved to `kubeloop/testing/faults`. @deprecated Import it from there; this alias goes in 0.3. */
export type VolumeFillFault = faults.VolumeFillFault;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type AdapterOptions = servers.AdapterOptions;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type AdapterPlane = servers.AdapterPlane;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type CatalogBundle = servers.CatalogBundle;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const catalogImage: typeof servers.catalogImage = servers.catalogImage;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type CatalogOptions = servers.CatalogOptions;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const findPrometheusBinary: typeof servers.findPrometheusBinary = servers.findPrometheusBinary;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const installOlm: typeof servers.installOlm = servers.installOlm;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const installPrometheusAdapter: typeof servers.installPrometheusAdapter =
  servers.installPrometheusAdapter;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const KARMADA_REGION_LABEL: typeof servers.KARMADA_REGION_LABEL = servers.KARMADA_REGION_LABEL;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type KarmadaComponentName = servers.KarmadaComponentName;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type KarmadaMember = servers.KarmadaMember;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type KarmadaMemberOptions = servers.KarmadaMemberOptions;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const KarmadaPlane: typeof servers.KarmadaPlane = servers.KarmadaPlane;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type KarmadaPlane = servers.KarmadaPlane;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type KarmadaPlaneOptions = servers.KarmadaPlaneOptions;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const locatePostgres: typeof servers.locatePostgres = servers.locatePostgres;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const olmAssets: typeof servers.olmAssets = servers.olmAssets;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const olmImage: typeof servers.olmImage = servers.olmImage;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type OlmInstall = servers.OlmInstall;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type OlmPlane = servers.OlmPlane;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const POSTGRES_BIN_ENV: typeof servers.POSTGRES_BIN_ENV = servers.POSTGRES_BIN_ENV;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const POSTGRES_BINARIES: typeof servers.POSTGRES_BINARIES = servers.POSTGRES_BINARIES;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const PostgresServer: typeof servers.PostgresServer = servers.PostgresServer;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PostgresServer = servers.PostgresServer;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const PostgresServerError: typeof servers.PostgresServerError = servers.PostgresServerError;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PostgresServerError = servers.PostgresServerError;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PostgresServerOptions = servers.PostgresServerOptions;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const PROMETHEUS_ADAPTER_VERSION: typeof servers.PROMETHEUS_ADAPTER_VERSION =
  servers.PROMETHEUS_ADAPTER_VERSION;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const prometheusAdapterBinary: typeof servers.prometheusAdapterBinary =
  servers.prometheusAdapterBinary;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PrometheusAlert = servers.PrometheusAlert;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const PrometheusError: typeof servers.PrometheusError = servers.PrometheusError;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PrometheusError = servers.PrometheusError;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PrometheusSample = servers.PrometheusSample;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const PrometheusServer: typeof servers.PrometheusServer = servers.PrometheusServer;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PrometheusServer = servers.PrometheusServer;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PrometheusServerOptions = servers.PrometheusServerOptions;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const promtool: typeof servers.promtool = servers.promtool;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type PromtoolResult = servers.PromtoolResult;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const publishCatalog: typeof servers.publishCatalog = servers.publishCatalog;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const pushToPlaneRegistry: typeof servers.pushToPlaneRegistry = servers.pushToPlaneRegistry;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const renderCatalog: typeof servers.renderCatalog = servers.renderCatalog;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export const startTunnelProxy: typeof servers.startTunnelProxy = servers.startTunnelProxy;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type TunnelProxy = servers.TunnelProxy;
/** Moved to `kubeloop/testing/servers`. @deprecated Import it from there; this alias goes in 0.3. */
export type TunnelProxyOptions = servers.TunnelProxyOptions;
