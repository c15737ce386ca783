// Starts a control plane, prints its folder, then ends as the first argument says:
//   throw  — an uncaught exception;   wait — runs until a signal arrives.
import { ControlPlane } from "../../dist/testing/index.js";

const plane = await new ControlPlane({ profile: process.argv[3] ?? "apiserver" }).start();
process.stdout.write(
  `${JSON.stringify({ dir: plane.dir, server: plane.server, pids: plane.components.map((c) => c.pid) })}\n`,
);
if (process.argv[2] === "throw") throw new Error("the test failed");
setInterval(() => {}, 1000);
