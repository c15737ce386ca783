import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe } from "vitest";
import { parse } from "yaml";
import { dependentsCases } from "../../../test/dependents-cases.js";
import { dependentsInputCases } from "../../../test/dependents-inputs-cases.js";
import { namespaces } from "../../../test/helpers.js";
import { MemoryApiServer } from "../../testing/memory/index.js";

// The same cases as dependents.test.ts, on MemoryApiServer (no garbage collection of Deployments'
// ReplicaSets is needed: the cases read only what the controller writes).

const server = new MemoryApiServer();
server.installCrd(
  parse(readFileSync(join(import.meta.dirname, "../../../test/fixtures/controller/counters.yaml"), "utf8")),
);
const client = server.client();
const namespace = namespaces(() => client, "deps");

describe("dependents on MemoryApiServer", () => {
  dependentsCases(() => ({
    client,
    namespace,
    installCrd: async (crd) => server.installCrd(crd as never),
  }));
  dependentsInputCases(() => ({
    client,
    namespace,
    installCrd: async (crd) => server.installCrd(crd as never),
  }));
});
