// The operator under fault: the Widget operator (one owned ConfigMap with spec.data, then
// observedGeneration and Ready), with leader election, as a user would write it with the public API.
// Run by the chaos suite and the soak through a supervisor, one process per replica.
// Env: KUBECONFIG, REPLICA (its name), CONCURRENCY (default 4), LEADER_ELECTION=false (one replica).
// Prints, for the suite's checkers: `B <key> <ms>` and `E <key> <ms> <generation>` around every
// reconcile (wall-clock ms, comparable across processes on one machine), `LEADING` once leading, and
// `S <json>` every second (heap, RSS, open handles and sockets, informer store sizes).
import { controller, done, Manager } from "kubeloop";
import { ConfigMap } from "kubeloop/k8s";
import { isTrue } from "kubeloop/resources";
import pino from "pino";
import { Widget } from "../peers/widget.ts";

const replica = process.env.REPLICA ?? "replica";
const now = () => performance.timeOrigin + performance.now();

function sameData(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const keys = Object.keys(a ?? {});
  return keys.length === Object.keys(b).length && keys.every((key) => a?.[key] === b[key]);
}

const widgets = controller(Widget)
  .named("widget-operator")
  .owns(ConfigMap)
  .concurrency(Number(process.env.CONCURRENCY ?? 4))
  .reconcile(async (widget, ctx) => {
    const key = `${ctx.namespace}/${ctx.name}`;
    process.stdout.write(`B ${key} ${now()}\n`);
    let generation = -1;
    try {
      if (ctx.deleted) return done();
      const data = widget.spec.data;
      const cached = ctx.cache.get({ type: ConfigMap, namespace: ctx.namespace, name: ctx.name });
      const owned = cached?.metadata?.ownerReferences?.some(
        (ref) => ref.uid === widget.metadata?.uid && ref.controller,
      );
      if (!cached || !owned || !sameData(cached.data, data)) {
        await ctx.apply({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: ctx.name, namespace: ctx.namespace ?? "" },
          data,
        });
      }
      const current = widget.metadata?.generation ?? 0;
      const status = widget.status;
      const readyNow =
        status?.observedGeneration === current &&
        isTrue(status?.conditions, "Ready") &&
        status?.conditions?.find((c) => c.type === "Ready")?.observedGeneration === current;
      if (!readyNow) await ctx.status({}, { ready: { status: true, reason: "Reconciled" } });
      generation = current;
      return done();
    } finally {
      process.stdout.write(`E ${key} ${now()} ${generation}\n`);
    }
  });

const manager = new Manager({
  kubeconfig: process.env.KUBECONFIG ?? "",
  metrics: false,
  probes: false,
  logger: pino({ level: process.env.LOG_LEVEL ?? "warn" }, pino.destination(2)),
  leaderElection:
    process.env.LEADER_ELECTION === "false" ? false : { id: "widget-operator", namespace: "default" },
});
manager.add(widgets);
const running = manager.start();
let leading = false;
setInterval(() => {
  if (manager.isLeader && !leading) {
    leading = true;
    process.stdout.write("LEADING\n");
  }
  const memory = process.memoryUsage();
  const resources = process.getActiveResourcesInfo();
  const stats = {
    replica,
    pid: process.pid,
    t: Date.now(),
    heapUsed: memory.heapUsed,
    rss: memory.rss,
    handles: resources.length,
    sockets: resources.filter((name) => name === "TCPSocketWrap" || name === "TLSWrap").length,
    stores: Object.fromEntries(manager.registry.informers.map((informer, i) => [`${i}`, informer.size])),
    lists: manager.registry.informers.reduce((sum, informer) => sum + informer.stats.lists, 0),
    relists: manager.registry.informers.reduce((sum, informer) => sum + informer.stats.relistsAfterGone, 0),
    poolReplacements: manager.client.transport.poolReplacements,
  };
  process.stdout.write(`S ${JSON.stringify(stats)}\n`);
}, 1000).unref();
await running;
