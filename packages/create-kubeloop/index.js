#!/usr/bin/env node
// `npm create kubeloop [FOLDER] -- [--name N] [--domain D]`: `kubeloop init`, run by the kubeloop
// this package depends on, so the new project starts on that very version. Everything else (the
// options, the messages) is kubeloop's own.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const manifest = require.resolve("kubeloop/package.json");
const cli = join(dirname(manifest), require(manifest).bin.kubeloop);
const result = spawnSync(process.execPath, [cli, "init", ...process.argv.slice(2)], { stdio: "inherit" });
process.exitCode = result.status ?? 1;
