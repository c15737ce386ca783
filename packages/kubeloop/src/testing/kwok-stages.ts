import { parseAllDocuments, stringify } from "yaml";
import { ControlPlaneError } from "./errors.js";

/**
 * Pods that misbehave on purpose, on the `cluster` profile's fake nodes: what a rollout test needs
 * to see a Deployment stall, crash-loop or come up slowly, without a real kubelet.
 *
 * kwok drives a pod through "stages" (selector → delay → status written). Its default set makes
 * every pod Running and Ready at once. A behaviour here adds stages for the pods it selects and
 * takes those pods out of the default `pod-ready` stage, so the two never race (kwok picks at
 * random among matching stages). kwok reads stages from one config file and uses its defaults only
 * when that file has none, so we always write the complete set: node stages, pod stages, ours.
 *
 * Behaviours are tried in order: a pod matched by an earlier one is left out of later ones.
 *
 * @example
 * ```ts
 * import { ControlPlane } from "kubeloop/testing";
 *
 * const plane = await new ControlPlane({
 *   profile: "cluster",
 *   podBehaviours: [
 *     // e.g. `image: registry.example/app:2.0-broken`: Running, never Ready (ProgressDeadlineExceeded)
 *     { pods: { imageTagContains: "broken" }, behaviour: "never-ready" },
 *     // pods labelled `example.com/crash: "true"`: CrashLoopBackOff, a restart every 10 s
 *     { pods: { label: "example.com/crash", value: "true" }, behaviour: "crash-loop" },
 *     // `image: app:2.0-slow`: Running at once, Ready 5 s later
 *     { pods: { imageTagContains: "slow" }, behaviour: "ready-after", seconds: 5 },
 *   ],
 * }).start();
 * ```
 */

/** Which pods a behaviour applies to. */
export type PodSelector =
  /** Pods with a container whose image tag (after the last `:`, digest ignored) contains this text. */
  | { imageTagContains: string }
  /** Pods with this label; with `value`, only when the label has that value. */
  | { label: string; value?: string };

/**
 * How the pods a selector picks misbehave, for `ControlPlaneOptions.podBehaviours`: the rollout
 * failures an operator must report (never Ready, crash-looping, slow to start).
 */
export type PodBehaviour =
  /** Running, containers started, but Ready=False forever: a readiness probe that never passes. */
  | { pods: PodSelector; behaviour: "never-ready" }
  /**
   * Running and never Ready; each container is in CrashLoopBackOff with its last state terminated
   * (exit code 1), and `restartCount` goes up by one every `restartEverySeconds` (default 10).
   */
  | { pods: PodSelector; behaviour: "crash-loop"; restartEverySeconds?: number }
  /** Running at once, Ready `seconds` later (a slow start-up or readiness probe). */
  | { pods: PodSelector; behaviour: "ready-after"; seconds: number };

/** A kwok `Stage` (kwok.x-k8s.io/v1alpha1), as YAML would hold it. */
export interface KwokStage {
  apiVersion: "kwok.x-k8s.io/v1alpha1";
  kind: "Stage";
  metadata: { name: string };
  spec: {
    resourceRef: { apiGroup: string; kind: string };
    selector?: { matchExpressions?: StageExpression[] };
    delay?: { durationMilliseconds?: number; jitterDurationMilliseconds?: number };
    next: Record<string, unknown>;
    [field: string]: unknown;
  };
}

interface StageExpression {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

/** A kubelet restarts a crashing container after 10 s first (its back-off doubles from there). */
export const DEFAULT_CRASH_RESTART_SECONDS = 10;
/** The default stage that makes every pod Ready; behaviours take their pods out of it. */
const POD_READY_STAGE = "pod-ready";

/** Throws a ControlPlaneError naming the first invalid behaviour and how to fix it. */
export function validatePodBehaviours(behaviours: readonly PodBehaviour[]): void {
  behaviours.forEach((b, i) => {
    const where = `podBehaviours[${i}]`;
    const kinds = ["never-ready", "crash-loop", "ready-after"];
    if (!kinds.includes(b.behaviour))
      throw new ControlPlaneError(
        `${where}.behaviour is "${String(b.behaviour)}"; use one of ${kinds.join(", ")}`,
      );
    const pods = b.pods as Partial<{ imageTagContains: unknown; label: unknown; value: unknown }>;
    if ("imageTagContains" in pods) {
      if (typeof pods.imageTagContains !== "string" || pods.imageTagContains === "")
        throw new ControlPlaneError(`${where}.pods.imageTagContains must be a non-empty string`);
    } else if ("label" in pods) {
      if (typeof pods.label !== "string" || !LABEL_KEY.test(pods.label))
        throw new ControlPlaneError(
          `${where}.pods.label "${String(pods.label)}" is not a label key (e.g. example.com/crash)`,
        );
    } else {
      throw new ControlPlaneError(`${where}.pods needs { imageTagContains } or { label, value? }`);
    }
    const seconds =
      b.behaviour === "ready-after"
        ? b.seconds
        : b.behaviour === "crash-loop"
          ? (b.restartEverySeconds ?? DEFAULT_CRASH_RESTART_SECONDS)
          : 1;
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds <= 0)
      throw new ControlPlaneError(
        `${where}: ${b.behaviour === "ready-after" ? "seconds" : "restartEverySeconds"} must be a number > 0, got ${String(seconds)}`,
      );
  });
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * The complete stage set for kwok's `--config`: the default stages (`defaultsYaml`, the multi-document
 * file installed beside kwok) with every behaviour's pods taken out of `pod-ready`, then each
 * behaviour's stages. Pure: the result is YAML text.
 */
export function composeKwokStages(defaultsYaml: string, behaviours: readonly PodBehaviour[]): string {
  validatePodBehaviours(behaviours);
  const defaults = parseAllDocuments(defaultsYaml).map((doc) => doc.toJS() as KwokStage);
  const podReady = defaults.find((s) => s.metadata?.name === POD_READY_STAGE);
  if (!podReady)
    throw new ControlPlaneError(
      `kwok's default stages have no "${POD_READY_STAGE}" stage; rebuild the assets (npx kubeloop assets build)`,
    );
  const selectors = behaviours.map((b) => b.pods);
  podReady.spec.selector ??= {};
  podReady.spec.selector.matchExpressions = [
    ...(podReady.spec.selector.matchExpressions ?? []),
    ...selectors.map(excluding),
  ];
  const extra = behaviours.flatMap((b, i) => {
    // First match wins: leave out pods an earlier behaviour took.
    const only = [matching(b.pods), ...selectors.slice(0, i).map(excluding)];
    return stagesFor(b, `kubeloop-${b.behaviour}-${i}`, only);
  });
  return [...defaults, ...extra].map((stage) => stringify(stage, { lineWidth: 0 })).join("---\n");
}

function stagesFor(b: PodBehaviour, name: string, only: StageExpression[]): KwokStage[] {
  const alive: StageExpression = { key: ".metadata.deletionTimestamp", operator: "DoesNotExist" };
  const phase = (p: string): StageExpression => ({ key: ".status.phase", operator: "In", values: [p] });
  const notReady: StageExpression = { key: READY_STATUS, operator: "NotIn", values: ["True"] };
  const starting = podStage(`${name}-start`, [alive, phase("Pending"), ...only], RUNNING_NOT_READY);
  switch (b.behaviour) {
    case "never-ready":
      return [starting];
    case "ready-after": {
      const ready = podStage(`${name}-ready`, [alive, phase("Running"), notReady, ...only], NOW_READY);
      ready.spec.delay = { durationMilliseconds: Math.round(b.seconds * 1000) };
      return [starting, ready];
    }
    case "crash-loop": {
      // No exit condition: each write is a change that matches again, so it crashes again.
      const every = b.restartEverySeconds ?? DEFAULT_CRASH_RESTART_SECONDS;
      const crash = podStage(`${name}-crash`, [alive, ...only], CRASH_LOOP);
      crash.spec.delay = { durationMilliseconds: Math.round(every * 1000) };
      return [starting, crash];
    }
  }
}

function podStage(name: string, expressions: StageExpression[], statusTemplate: string): KwokStage {
  return {
    apiVersion: "kwok.x-k8s.io/v1alpha1",
    kind: "Stage",
    metadata: { name },
    spec: {
      resourceRef: { apiGroup: "v1", kind: "Pod" },
      selector: { matchExpressions: expressions },
      next: { statusTemplate },
    },
  };
}

const READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status';

/** A jq query that yields `true` when the selector matches the pod (kwok evaluates with gojq). */
function query(pods: PodSelector): { key: string; values?: string[] } {
  if ("imageTagContains" in pods) {
    const tag = '(sub("@.*$"; "") | capture(":(?<t>[^:/]+)$").t // "")';
    return {
      key: `[.spec.containers[].image | ${tag} | contains(${JSON.stringify(pods.imageTagContains)})] | any`,
      values: ["true"],
    };
  }
  const key = `.metadata.labels[${JSON.stringify(pods.label)}]`;
  return pods.value === undefined ? { key } : { key, values: [pods.value] };
}

function matching(pods: PodSelector): StageExpression {
  const { key, values } = query(pods);
  return values ? { key, operator: "In", values } : { key, operator: "Exists" };
}

function excluding(pods: PodSelector): StageExpression {
  const { key, values } = query(pods);
  return values ? { key, operator: "NotIn", values } : { key, operator: "DoesNotExist" };
}

/**
 * Pod and host IPs as kwok's own pod-ready writes them. Only the first stage of a pod may write
 * them: kwok allocates a fresh IP at each call, and the API server refuses a second IP per family.
 */
const ADDRESSES = `
${ips("host", "NodeIPsWith .spec.nodeName")}
${ips("pod", 'PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" )')}`;

/** `<kind>IP` and `<kind>IPs` from what kwok's `lookup` function allocates, if anything. */
function ips(kind: "host" | "pod", lookup: string): string {
  return `{{ $${kind}IPs := ${lookup} }}
{{ with $${kind}IPs }}
${kind}IP: {{ index . 0 | Quote }}
${kind}IPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}`;
}

const NOT_READY_CONDITIONS = `
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodScheduled
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotReady
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotReady
  type: ContainersReady`;

/** Every container running since `$now`, its readiness as given. */
const runningContainers = (ready: boolean) => `containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: ${ready}
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}`;

const RUNNING_NOT_READY = `{{ $now := Now }}
${NOT_READY_CONDITIONS}
${runningContainers(false)}
${ADDRESSES}
phase: Running
startTime: {{ $now | Quote }}
`;

/** The containers passed their readiness probes (addresses were written when the pod started). */
const NOW_READY = `{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  reason: ""
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  reason: ""
  type: ContainersReady
${runningContainers(true)}
`;

const CRASH_LOOP = `{{ $now := Now }}
{{ $root := . }}
${NOT_READY_CONDITIONS}
containerStatuses:
{{ range .spec.containers }}
{{ $name := .name }}
{{ $restarts := 0 }}
{{ range ( or $root.status.containerStatuses list ) }}
{{ if eq .name $name }}{{ $restarts = ( or .restartCount 0 ) }}{{ end }}
{{ end }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  started: false
  restartCount: {{ add $restarts 1 }}
  lastState:
    terminated:
      exitCode: 1
      reason: Error
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  state:
    waiting:
      reason: CrashLoopBackOff
      message: {{ printf "back-off restarting failed container %s" .name | Quote }}
{{ end }}
phase: Running
`;
