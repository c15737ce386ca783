// A small operator for the manager's process-level tests: it reconciles ConfigMaps labelled
// `slow=true`, taking SLOW_MS per reconcile, with leader election in LEASE_NAMESPACE.
import { controller, done, Manager } from "../../dist/index.js";
import { ConfigMap } from "../../dist/k8s/index.js";

const slow = Number(process.env.SLOW_MS ?? "3000");
const echo = controller(ConfigMap)
  .named("slow")
  .reconcile(async (cm) => {
    if (cm.metadata?.labels?.slow !== "true") return done();
    process.stderr.write(`reconcile started ${cm.metadata.name}\n`);
    await new Promise((resolve) => setTimeout(resolve, slow));
    process.stderr.write(`reconcile finished ${cm.metadata.name}\n`);
    return done();
  });

await new Manager({
  kubeconfig: process.env.KUBECONFIG,
  probes: { port: 0 },
  metrics: { port: 0 },
  leaderElection: { id: "slow-operator", namespace: process.env.LEASE_NAMESPACE ?? "default" },
})
  .add(echo)
  .start();
process.stderr.write("manager returned\n");
