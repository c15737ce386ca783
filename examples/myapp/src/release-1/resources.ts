import { defineResource } from "kubeloop/resources";
import { columns, specV1alpha1, status } from "../resources.ts";

/**
 * MyApp as release 1 shipped it: `v1alpha1` only, stored as such, with `spec.size`. Kept so the
 * upgrade to release 2 (test/upgrade.test.ts) starts from what users really had installed.
 */
export const MyAppV1alpha1 = defineResource({
  group: "apps.example.com",
  version: "v1alpha1",
  kind: "MyApp",
  shortNames: ["ma"],
  description: "An application: a Deployment and a Service, rolled out with automatic rollback.",
  spec: specV1alpha1,
  status,
  printerColumns: columns(".spec.size"),
});
