import { readFileSync } from "node:fs";
import { request } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOwner, jsonpath, kubectlOn } from "../../test/plane-kubectl.js";
import { HARDENED_ADMISSION_PLUGINS } from "./control-plane/hardened.js";
import { ControlPlane } from "./control-plane.js";
import { ControlPlaneError } from "./errors.js";

// The hardened option, on the apiserver profile (admission and authentication are the API
// server's alone): each setting is shown by the request it refuses or changes.

let plane: ControlPlane;
const k = kubectlOn(() => plane);

beforeAll(async () => {
  plane = await new ControlPlane({ profile: "apiserver", hardened: true }).start();
});
afterAll(async () => {
  await plane?.stop();
});

/** The status code of a request without credentials. */
function anonymousStatus(path: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = request(`${plane.server}${path}`, { ca: plane.caCert }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on("error", reject);
    req.end();
  });
}

const pod = (name: string, secure: boolean) =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      ...(secure
        ? { securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } } }
        : {}),
      containers: [
        {
          name: "app",
          image: "registry.k8s.io/pause:3.10",
          imagePullPolicy: "IfNotPresent",
          ...(secure
            ? { securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } }
            : {}),
        },
      ],
    },
  });

describe("ControlPlane, hardened", () => {
  it("refuses anonymous requests, health endpoints included", async () => {
    expect(await anonymousStatus("/readyz")).toBe(401);
    expect(await anonymousStatus("/api/v1/namespaces")).toBe(401);
    expect((await k(["get", "--raw", "/readyz"])).stdout).toBe("ok");
  });

  it("enforces Pod Security restricted on a namespace without labels, and always pulls images", async () => {
    expect((await k(["create", "namespace", "pss"])).code).toBe(0);
    const refused = await k(["-n", "pss", "create", "-f", "-"], pod("loose", false));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('violates PodSecurity "restricted:latest"');
    expect(refused.stderr).toContain("runAsNonRoot != true");
    const accepted = await k(["-n", "pss", "create", "-f", "-"], pod("tight", true));
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(await jsonpath(k, "pss", ["pod", "tight"], "{.spec.containers[0].imagePullPolicy}")).toBe(
      "Always",
    );
  });

  it("lets only who may update the owner's finalizers set blockOwnerDeletion, and audits who wrote", async () => {
    const uid = await createOwner(k, "owners");
    const user = plane.addUser("child-writer");
    const grant = (name: string, resources: string) =>
      k(["-n", "owners", "create", "role", name, "--verb=get,create,update", `--resource=${resources}`]).then(
        () => k(["-n", "owners", "create", "rolebinding", name, `--role=${name}`, "--user=child-writer"]),
      );
    expect((await grant("writer", "configmaps")).code).toBe(0);
    const child = (name: string) =>
      JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name,
          ownerReferences: [
            {
              apiVersion: "v1",
              kind: "ConfigMap",
              name: "owner",
              uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
      });
    const refused = await k(["-n", "owners", "create", "-f", "-"], child("first"), user.kubeconfigPath);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on",
    );

    expect((await grant("finalizers", "configmaps/finalizers")).code).toBe(0);
    const created = await k(["-n", "owners", "create", "-f", "-"], child("second"), user.kubeconfigPath);
    expect(created.code, created.stderr).toBe(0);

    const creates = plane
      .auditRecords()
      .filter(
        (r) =>
          r.verb === "create" && r.objectRef?.resource === "configmaps" && r.user.username === "child-writer",
      );
    expect(creates.map((r) => r.responseStatus?.code)).toEqual([403, 201]);
  });
});

describe("ControlPlane, hardened: nodes, admission plugins, the audit log", () => {
  it("authorizes a kubelet for its own Node, and keeps it off the labels reserved for admins", async () => {
    const node = { apiVersion: "v1", kind: "Node", metadata: { name: "node-a" } };
    expect((await k(["create", "-f", "-"], JSON.stringify(node))).code).toBe(0);
    const kubelet = plane.addUser("system:node:node-a", ["system:nodes"]);
    const label = (value: string) => k(["label", "node", "node-a", value], undefined, kubelet.kubeconfigPath);
    const own = await label("example.com/zone=a");
    expect(own.code, own.stderr).toBe(0);
    const reserved = await label("node-restriction.kubernetes.io/pool=gold");
    expect(reserved.code).not.toBe(0);
    expect(reserved.stderr).toContain("is not allowed to modify labels: node-restriction.kubernetes.io/pool");
  });

  it("loads every hardened admission plugin, EventRateLimit included (its limit is too high to trip here)", () => {
    const log = readFileSync(
      plane.components.find((c) => c.name === "kube-apiserver")?.logPath ?? "",
      "utf8",
    );
    const loaded = [
      ...log.matchAll(/admission controller\(s\) successfully in the following order: ([\w,]+)/g),
    ].flatMap((match) => match[1]?.split(",") ?? []);
    for (const plugin of HARDENED_ADMISSION_PLUGINS) expect(loaded).toContain(plugin);
  });

  it("has no audit log when not hardened, and says how to get one", () => {
    expect(() => new ControlPlane().auditLogPath).toThrow(ControlPlaneError);
    expect(() => new ControlPlane().auditLogPath).toThrow("start it with `hardened: true`");
  });
});
