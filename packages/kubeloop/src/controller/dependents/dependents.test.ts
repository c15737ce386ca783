import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { dependentsCases } from "../../../test/dependents-cases.js";
import { dependentsInputCases } from "../../../test/dependents-inputs-cases.js";
import { namespaces, startPlane, stopPlane } from "../../../test/helpers.js";
import type { Client } from "../../client/index.js";
import type { ControlPlane, CrdObject } from "../../testing/index.js";

// The dependents cases on a real kube-apiserver (apiserver profile: no controller-manager, so the
// test plays the Deployment controller's part where readiness needs it).

let plane: ControlPlane;
let client: Client;

beforeAll(async () => {
  ({ plane, client } = await startPlane({
    crds: [join(import.meta.dirname, "../../../test/fixtures/controller/counters.yaml")],
  }));
});
afterAll(() => stopPlane(plane, client));

const namespace = namespaces(() => client, "deps");

describe("dependents on a real API server", () => {
  dependentsCases(() => ({
    client,
    namespace,
    installCrd: async (crd) => {
      await plane.installCrdObjects([crd as unknown as CrdObject]);
    },
  }));
  dependentsInputCases(() => ({
    client,
    namespace,
    installCrd: async (crd) => {
      await plane.installCrdObjects([crd as unknown as CrdObject]);
    },
  }));
});
