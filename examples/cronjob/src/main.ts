// Tutorial step 7: the entry point. `npm start` runs the controller against the current KUBECONFIG.
// The Manager takes its settings from flags and the environment the generated Deployment sets
// (LEADER_ELECT, METRICS_PORT, PROBE_PORT, …); the operator's name names its Lease.
import { Manager, optionsFromCommandLine } from "kubeloop";
import { cronJobController } from "./cronjob.ts";

const manager = new Manager(optionsFromCommandLine({ name: "cronjob-operator" }));
manager.add(cronJobController);
await manager.start();
