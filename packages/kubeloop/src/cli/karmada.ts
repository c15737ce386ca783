import { CliError } from "./errors.js";

/**
 * `kubeloop generate --karmada REGIONS` (or `"kubeloop": { "karmada": "…" }`): the Karmada policies
 * that deliver the operator to a fleet, per region, as seed 003 delivered it with KubeFed
 * (docs/multi-cluster.md):
 *
 * - cluster-wide.yaml: a ClusterPropagationPolicy sending the CRDs and cluster-scoped RBAC to every
 *   member, and one sending the operator's namespace to the chosen regions (namespace.yaml labels
 *   it so Karmada does not copy it everywhere on its own);
 * - operator.yaml: a PropagationPolicy sending what lives in that namespace (Deployment, RBAC,
 *   Services) to the chosen regions, one copy each;
 * - override-<region>.yaml: an OverridePolicy per region with its replicas and image registry;
 * - placement-<region>.yaml: a ClusterPropagationPolicy placing the custom resources labelled
 *   `topology.kubernetes.io/region: <region>` on that region's members only;
 * - interpreter.yaml: a ResourceInterpreterCustomization per kind, so Karmada reads a custom
 *   resource's health from its Ready condition and brings its status back to the template.
 */

export const REGION_LABEL = "topology.kubernetes.io/region";
const POLICY = "policy.karmada.io/v1alpha1";
/** Karmada copies every namespace to every member unless it carries this label. */
const SKIP_AUTO_PROPAGATION = "namespace.karmada.io/skip-auto-propagation";

/** One region of `--karmada`: `REGION[=REPLICAS][@REGISTRY]`. */
export interface KarmadaRegion {
  region: string;
  replicas?: number;
  registry?: string;
}

/** What the policies are written from: the operator and the objects `kubeloop generate` made. */
export interface KarmadaInput {
  name: string;
  namespace: string;
  regions: KarmadaRegion[];
  /** The CRDs: each kind is placed by region and interpreted. */
  crds: {
    metadata: { name: string };
    spec: { group: string; names: { kind: string }; versions: { name: string; storage?: boolean }[] };
  }[];
  /** Every other generated object; the cluster-scoped ones go to every member. */
  objects: object[];
}

const REGION_NAME = /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;

/**
 * Parses `cn-east=5@registry.cn-east.example.com,ap-southeast=3`: the regions the operator runs in,
 * each with its Deployment's replicas and the registry its image comes from (both optional).
 */
export function parseKarmadaRegions(value: string, where = "--karmada"): KarmadaRegion[] {
  const regions = value
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const match = /^([^=@\s]+)(?:=(\d+))?(?:@(\S+))?$/.exec(part);
      if (!match || !REGION_NAME.test(match[1] as string))
        throw new CliError(
          `${where}: "${part}" is not REGION[=REPLICAS][@REGISTRY] (e.g. cn-east=5@registry.cn-east.example.com); ` +
            "a region is a label value: lowercase letters, digits, '-' and '.'",
        );
      const replicas = match[2] === undefined ? undefined : Number(match[2]);
      if (replicas !== undefined && replicas > 1000)
        throw new CliError(`${where}: ${match[1]} asks for ${replicas} replicas; at most 1000`);
      return {
        region: match[1] as string,
        ...(replicas !== undefined ? { replicas } : {}),
        ...(match[3] ? { registry: match[3] } : {}),
      };
    });
  if (regions.length === 0)
    throw new CliError(`${where}: name at least one region, e.g. cn-east=5,ap-southeast=3`);
  const names = regions.map((r) => r.region);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice) throw new CliError(`${where}: region ${twice} is given twice`);
  return regions;
}

/** The policy files (under config/karmada/) and their objects. */
export function karmadaPolicies(input: KarmadaInput): Map<string, object[]> {
  const { name, namespace, regions } = input;
  const inRegions = regionAffinity(regions.map((r) => r.region));
  const files = new Map<string, object[]>();
  files.set("namespace.yaml", [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: namespace, labels: { [SKIP_AUTO_PROPAGATION]: "true" } },
    },
  ]);
  files.set("cluster-wide.yaml", [
    policy("ClusterPropagationPolicy", `${name}-cluster-wide`, undefined, {
      resourceSelectors: [
        ...input.crds.map((crd) =>
          selector("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd.metadata.name),
        ),
        ...clusterScoped(input.objects),
      ],
      // No affinity: every member, also the ones that join later.
      placement: {},
    }),
    policy("ClusterPropagationPolicy", `${name}-namespace`, undefined, {
      resourceSelectors: [selector("v1", "Namespace", namespace)],
      placement: { clusterAffinity: inRegions },
    }),
  ]);
  files.set("operator.yaml", [
    policy("PropagationPolicy", name, namespace, {
      resourceSelectors: NAMESPACED_KINDS.map(([apiVersion, kind]) => ({ apiVersion, kind })),
      placement: { clusterAffinity: inRegions, replicaScheduling: { replicaSchedulingType: "Duplicated" } },
    }),
  ]);
  for (const region of regions) {
    const overriders = regionOverriders(region);
    if (overriders)
      files.set(`override-${region.region}.yaml`, [
        policy("OverridePolicy", `${name}-${region.region}`, namespace, {
          resourceSelectors: [selector("apps/v1", "Deployment", name)],
          overrideRules: [{ targetCluster: regionAffinity([region.region]), overriders }],
        }),
      ]);
    files.set(`placement-${region.region}.yaml`, [
      policy("ClusterPropagationPolicy", `${name}-${region.region}`, undefined, {
        resourceSelectors: input.crds.map((crd) => ({
          apiVersion: `${crd.spec.group}/${storageVersion(crd)}`,
          kind: crd.spec.names.kind,
          labelSelector: { matchLabels: { [REGION_LABEL]: region.region } },
        })),
        placement: { clusterAffinity: regionAffinity([region.region]) },
      }),
    ]);
  }
  if (input.crds.length)
    files.set(
      "interpreter.yaml",
      input.crds.map((crd) => ({
        apiVersion: "config.karmada.io/v1alpha1",
        kind: "ResourceInterpreterCustomization",
        metadata: { name: `${name}-${crd.metadata.name}` },
        spec: {
          target: { apiVersion: `${crd.spec.group}/${storageVersion(crd)}`, kind: crd.spec.names.kind },
          customizations: {
            healthInterpretation: { luaScript: HEALTH_LUA },
            statusReflection: { luaScript: REFLECT_LUA },
            statusAggregation: { luaScript: AGGREGATE_LUA },
          },
        },
      })),
    );
  return files;
}

/** What the operator's namespace holds, as `kubeloop generate` writes it. */
const NAMESPACED_KINDS: [string, string][] = [
  ["apps/v1", "Deployment"],
  ["v1", "ServiceAccount"],
  ["v1", "Service"],
  ["v1", "ConfigMap"],
  ["rbac.authorization.k8s.io/v1", "Role"],
  ["rbac.authorization.k8s.io/v1", "RoleBinding"],
  ["policy/v1", "PodDisruptionBudget"],
];

/**
 * ClusterRoles and ClusterRoleBindings go to every member. Webhook configurations do not: on
 * Karmada's API server they would act on Karmada itself (docs/multi-cluster.md says how to ship them).
 */
function clusterScoped(objects: object[]): object[] {
  return objects
    .map(
      (object) =>
        object as { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } },
    )
    .filter((o) => (o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding") && !o.metadata?.namespace)
    .map((o) => selector(o.apiVersion as string, o.kind as string, o.metadata?.name as string))
    .filter((s, i, all) => all.findIndex((t) => JSON.stringify(t) === JSON.stringify(s)) === i);
}

function regionOverriders(region: KarmadaRegion): object | undefined {
  const overriders: Record<string, object[]> = {};
  if (region.replicas !== undefined)
    overriders.plaintext = [{ path: "/spec/replicas", operator: "replace", value: region.replicas }];
  if (region.registry)
    overriders.imageOverrider = [{ component: "Registry", operator: "replace", value: region.registry }];
  return Object.keys(overriders).length ? overriders : undefined;
}

function regionAffinity(regions: string[]): object {
  return { labelSelector: { matchExpressions: [{ key: REGION_LABEL, operator: "In", values: regions }] } };
}

function selector(apiVersion: string, kind: string, name: string): object {
  return { apiVersion, kind, name };
}

function policy(kind: string, name: string, namespace: string | undefined, spec: object): object {
  return { apiVersion: POLICY, kind, metadata: { name, ...(namespace ? { namespace } : {}) }, spec };
}

function storageVersion(crd: KarmadaInput["crds"][number]): string {
  return (crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0])?.name ?? "v1";
}

/** Healthy when the Ready condition is True for the object's current generation. */
const HEALTH_LUA = `function InterpretHealth(observedObj)
  local status = observedObj.status
  if status == nil or status.conditions == nil then return false end
  if status.observedGeneration ~= nil and status.observedGeneration ~= observedObj.metadata.generation then return false end
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Ready" then return condition.status == "True" end
  end
  return false
end
`;

/** The member's status, with the generations the aggregation compares. */
const REFLECT_LUA = `function ReflectStatus(observedObj)
  if observedObj.status == nil then return {} end
  local status = {}
  for key, value in pairs(observedObj.status) do status[key] = value end
  status.generation = observedObj.metadata.generation
  local annotations = observedObj.metadata.annotations
  if annotations ~= nil and annotations["resourcetemplate.karmada.io/generation"] ~= nil then
    status.resourceTemplateGeneration = tonumber(annotations["resourcetemplate.karmada.io/generation"])
  end
  return status
end
`;

/**
 * Back onto the template: one member's status as it is; several members' whole numbers summed, the
 * rest from the first, Ready only when Ready everywhere. observedGeneration is the template's once
 * every member has reconciled its latest spec.
 */
const AGGREGATE_LUA = `function AggregateStatus(desiredObj, statusItems)
  if statusItems == nil or #statusItems == 0 then return desiredObj end
  local status = {}
  local observed = true
  local ready = nil
  for i = 1, #statusItems do
    local item = statusItems[i].status
    if item == nil or item.observedGeneration == nil or item.observedGeneration ~= item.generation
      or item.resourceTemplateGeneration ~= desiredObj.metadata.generation then
      observed = false
    end
    if item ~= nil then
      for key, value in pairs(item) do
        if key == "conditions" then
          for _, condition in ipairs(value) do
            if condition.type == "Ready" and (ready == nil or condition.status ~= "True") then ready = condition end
          end
          if status.conditions == nil then status.conditions = value end
        elseif key ~= "generation" and key ~= "resourceTemplateGeneration" and key ~= "observedGeneration" then
          if i > 1 and type(value) == "number" and type(status[key]) == "number" then
            status[key] = status[key] + value
          elseif status[key] == nil then
            status[key] = value
          end
        end
      end
    end
  end
  if ready ~= nil and status.conditions ~= nil then
    local merged = {}
    for _, condition in ipairs(status.conditions) do
      if condition.type == "Ready" then table.insert(merged, ready) else table.insert(merged, condition) end
    end
    status.conditions = merged
  end
  if observed then
    status.observedGeneration = desiredObj.metadata.generation
  elseif desiredObj.status ~= nil then
    status.observedGeneration = desiredObj.status.observedGeneration
  end
  desiredObj.status = status
  return desiredObj
end
`;
