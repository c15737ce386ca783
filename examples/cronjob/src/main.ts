// Tutorial step 7: the entry point. `npm start` runs the controller against the current KUBECONFIG.
import { Manager } from "kubeloop";
import { cronJobController } from "./cronjob.ts";

const manager = new Manager({
  leaderElection: process.env.LEADER_ELECT === "true" ? { id: "cronjob-operator" } : false,
});
manager.add(cronJobController);
await manager.start();
