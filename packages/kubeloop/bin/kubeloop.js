#!/usr/bin/env node
// The `kubeloop` command. npm links a package's bin when it installs the package, and only if the
// file exists then: in a clone of the repository, `npm install` runs before dist/ is built, so the
// bin is this committed file rather than dist/cli/main.js itself.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (existsSync(fileURLToPath(main))) {
  await import(main.href);
} else {
  // biome-ignore lint/suspicious/noConsole: the command's own message, before the CLI exists.
  console.error(
    `kubeloop: ${fileURLToPath(main)} does not exist: kubeloop is not built yet. ` +
      "In a clone of the repository, run `npm run build` at its root first.",
  );
  process.exitCode = 1;
}
