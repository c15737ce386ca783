import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOwner, jsonpath, kubectlOn } from "../../test/plane-kubectl.js";
import { ControlPlane } from "./control-plane.js";

describe("ControlPlane, cluster profile", () => {
  let plane: ControlPlane;
  const k = kubectlOn(() => plane);

  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "cluster", nodes: 2 }).start();
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it("has the requested number of Ready fake nodes", async () => {
    const result = await k([
      "get",
      "nodes",
      "-o",
      'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
    ]);
    expect(result.stdout.trim().split("\n").sort()).toEqual(["kwok-node-0=True", "kwok-node-1=True"]);
  });

  it("runs a Deployment's Pods until readyReplicas is 3", async () => {
    expect((await k(["create", "namespace", "deploy"])).code).toBe(0);
    const created = await k(["-n", "deploy", "create", "deployment", "web", "--image=nginx", "--replicas=3"]);
    expect(created.code, created.stderr).toBe(0);
    const rollout = await k(["-n", "deploy", "rollout", "status", "deployment/web", "--timeout=90s"]);
    expect(rollout.code, rollout.stderr).toBe(0);
    expect(await jsonpath(k, "deploy", ["deployment", "web"], "{.status.readyReplicas}")).toBe("3");
    const pods = await jsonpath(
      k,
      "deploy",
      ["pods"],
      '{range .items[*]}{.status.phase} {.spec.nodeName}{"\\n"}{end}',
    );
    const lines = pods.trim().split("\n");
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toMatch(/^Running kwok-node-[01]$/);
  });

  it("garbage-collects the dependents of a deleted owner", async () => {
    const uid = await createOwner(k, "gc");
    expect(uid).toMatch(/^[0-9a-f-]{36}$/);
    const dependent = `apiVersion: v1
kind: Secret
metadata:
  name: dependent
  namespace: gc
  ownerReferences:
    - { apiVersion: v1, kind: ConfigMap, name: owner, uid: ${uid} }
stringData: { token: x }
`;
    expect((await k(["apply", "-f", "-"], dependent)).code).toBe(0);
    expect((await k(["-n", "gc", "delete", "configmap", "owner", "--wait=true"])).code).toBe(0);
    const waited = await k(["-n", "gc", "wait", "--for=delete", "secret/dependent", "--timeout=60s"]);
    expect(waited.code, waited.stderr).toBe(0);
    const gone = await k(["-n", "gc", "get", "secret", "dependent"]);
    expect(gone.stderr).toContain("NotFound");
  });

  it("admits Pods with the default ServiceAccount that the controller manager created", async () => {
    const sa = await k(["-n", "default", "get", "serviceaccount", "default", "-o", "name"]);
    expect(sa.stdout.trim()).toBe("serviceaccount/default");
  });
});
