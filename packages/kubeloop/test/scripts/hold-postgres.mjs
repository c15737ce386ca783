// Starts a PostgreSQL server, prints its folder and the postmaster's pid, then ends as the first
// argument says:   throw — an uncaught exception;   wait — runs until a signal arrives.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PostgresServer } from "../../dist/testing/index.js";

const pg = await new PostgresServer().start();
const pid = Number(readFileSync(join(pg.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
process.stdout.write(`${JSON.stringify({ dir: pg.dir, pid })}\n`);
if (process.argv[2] === "throw") throw new Error("the test failed");
setInterval(() => {}, 1000);
