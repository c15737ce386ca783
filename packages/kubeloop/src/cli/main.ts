#!/usr/bin/env node
// The `kubeloop` command's entry. It loads nothing before it has checked Node's version: on an older
// Node, the libraries the command imports fail at load time with errors that name none of this.
import { unsupportedNode } from "./node-version.js";

const problem = unsupportedNode(process.versions.node);
if (problem) {
  console.error(`kubeloop: ${problem}`);
  process.exitCode = 1;
} else {
  await import("./program.js");
}
