import { execFileSync, execSync, spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonpath, kubectlOn } from "../../test/plane-kubectl.js";
import { pollUntil } from "../util/index.js";
import { defaultAssetsRoot } from "./assets/index.js";
import { runPod } from "./cluster/index.js";
import { ControlPlane } from "./control-plane.js";

// The node profile, through kubectl as a user would drive it: real containers on a real kubelet.
describe("ControlPlane, node profile", () => {
  let plane: ControlPlane;
  let tools: string;
  let nginx: string;
  const k = kubectlOn(() => plane);
  const runIn = (
    name: string,
    image: string,
    script: string,
    spec: Record<string, unknown> = {},
    container: Record<string, unknown> = {},
  ) =>
    runPod({
      kubeconfig: plane.kubeconfigPath,
      namespace: "real",
      name,
      image,
      command: ["sh", "-c", script],
      spec,
      container,
    });
  const ok = async (args: string[], input?: string) => {
    const result = await k(args, input);
    expect(result.code, `kubectl ${args.join(" ")}: ${result.stderr}`).toBe(0);
    return result.stdout;
  };

  beforeAll(async () => {
    plane = await new ControlPlane({ profile: "node" }).start();
    tools = await plane.loadBaseImage("tools");
    nginx = await plane.loadBaseImage("nginx");
    await ok(["create", "namespace", "real"]);
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it("registers a Ready node whose runtime is containerd, under its own node identity", async () => {
    const wide = await ok(["get", "nodes", "-o", "wide"]);
    expect(wide).toMatch(/node-0\s+Ready/);
    expect(wide).toContain("containerd://2.3.4");
    expect(wide).toContain(plane.nodeIp("node-0"));
    // The Node authorizer confines the kubelet to its own node: it may not touch another's.
    const kubeconfig = `${plane.dir}/nodes/node-0/kubelet.kubeconfig`;
    const own = await k(["auth", "can-i", "get", "nodes/node-0"], undefined, kubeconfig);
    expect(own.stdout.trim()).toBe("yes");
    const other = await k(["auth", "can-i", "delete", "nodes/node-9"], undefined, kubeconfig);
    expect(other.stdout.trim()).toBe("no");
  });

  it("runs a Deployment of a loaded image in real containers, with logs, exec and port-forward", async () => {
    await ok(["-n", "real", "create", "deployment", "web", `--image=${nginx}`, "--port=80"]);
    await ok(["-n", "real", "rollout", "status", "deployment/web", "--timeout=90s"]);
    await ok(["-n", "real", "expose", "deployment", "web", "--port=80", "--target-port=8080"]);
    const version = await k(["-n", "real", "exec", "deployment/web", "--", "/usr/sbin/nginx", "-v"]);
    expect(version.stderr).toContain("nginx version: nginx/1.22.1");
    // The pod's address is its own, in the node's pod range.
    const podIp = await jsonpath(k, "real", ["pods", "-l", "app=web"], "{.items[0].status.podIP}");
    expect(podIp).toMatch(/^10\.\d+\.128\.\d+$/);
    const forwarded = await portForward([
      "--kubeconfig",
      plane.kubeconfigPath,
      "-n",
      "real",
      "port-forward",
      "deployment/web",
      ":8080",
    ]);
    try {
      const page = await fetch(`http://127.0.0.1:${forwarded.port}/`);
      expect(await page.text()).toContain("Welcome to nginx!");
    } finally {
      forwarded.stop();
    }
    // nginx logs each request to its standard output, which kubectl logs reads from the node.
    await pollUntil(
      async () => (await ok(["-n", "real", "logs", "deployment/web"])).includes('"GET / HTTP/1.1" 200'),
      {
        timeoutMs: 10_000,
        message: "the request in the container's log",
      },
    );
  });

  it("resolves Services by DNS name from another pod, and keeps pods off every other address", async () => {
    await ok(["-n", "real", "rollout", "status", "deployment/web", "--timeout=90s"]);
    const run = async (name: string, script: string) => (await runIn(name, tools, script)).logs;
    // kube-proxy programs a new Service's rules within a second or so: a client retries, as real ones do.
    const page = await run(
      "client",
      "for i in $(seq 20); do curl -sS -m 5 http://web.real.svc.cluster.local/ && break; sleep 0.5; done",
    );
    expect(page).toContain("Welcome to nginx!");
    // A server this machine reaches, in a network namespace of its own that is not the cluster's:
    // pods must not reach it, even while the machine forwards packets (as hosts running Docker do).
    await using stranger = await startStranger();
    expect(await (await fetch(stranger.url)).text()).toContain("stranger");
    const forwarding = readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim();
    writeFileSync("/proc/sys/net/ipv4/ip_forward", "1");
    try {
      const probe = await run(
        "outside",
        `curl -sS -m 5 http://${plane.registry}/v2/ && echo host-ok; ` +
          `curl -sS -m 5 ${stranger.url} && echo escaped; ` +
          "nslookup example.com >/dev/null 2>&1 && echo resolved-outside; echo done",
      );
      expect(probe).toContain("host-ok");
      expect(probe).not.toContain("escaped");
      expect(probe).not.toContain("resolved-outside");
      expect(probe).toContain("done");
    } finally {
      writeFileSync("/proc/sys/net/ipv4/ip_forward", forwarding);
    }
  });

  it("lists objects from inside a pod with its ServiceAccount token and CA (in-cluster configuration)", async () => {
    await ok(["-n", "real", "create", "serviceaccount", "lister"]);
    await ok(["-n", "real", "create", "role", "lister", "--verb=list", "--resource=pods"]);
    await ok([
      "-n",
      "real",
      "create",
      "rolebinding",
      "lister",
      "--role=lister",
      "--serviceaccount=real:lister",
    ]);
    const account = "/var/run/secrets/kubernetes.io/serviceaccount";
    const script =
      `curl -sS -m 10 --cacert ${account}/ca.crt -H "Authorization: Bearer $(cat ${account}/token)" ` +
      "https://kubernetes.default.svc/api/v1/namespaces/real/pods";
    const listed = (await runIn("lister", tools, script, { serviceAccountName: "lister" })).logs;
    expect(listed).toMatch(/"kind":\s*"PodList"/);
    expect(listed).toMatch(/"name":\s*"web-/);
  });

  it("binds a PersistentVolumeClaim whose data outlives the pod", async () => {
    const pod = (name: string, command: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: real }
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: ${tools}
      command: ["sh", "-c", ${JSON.stringify(command)}]
      volumeMounts: [{ name: data, mountPath: /data }]
  volumes:
    - name: data
      persistentVolumeClaim: { claimName: data }
`;
    await ok(
      ["apply", "-f", "-"],
      `apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: data, namespace: real }
spec:
  accessModes: [ReadWriteOnce]
  resources: { requests: { storage: 10Mi } }
`,
    );
    await ok(["-n", "real", "wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s"]);
    await ok(["apply", "-f", "-"], pod("writer", "echo kept-across-pods > /data/proof"));
    await ok([
      "-n",
      "real",
      "wait",
      "--for=jsonpath={.status.phase}=Succeeded",
      "pod/writer",
      "--timeout=90s",
    ]);
    await ok(["-n", "real", "delete", "pod", "writer", "--wait=true"]);
    await ok(["apply", "-f", "-"], pod("reader", "cat /data/proof"));
    await ok([
      "-n",
      "real",
      "wait",
      "--for=jsonpath={.status.phase}=Succeeded",
      "pod/reader",
      "--timeout=90s",
    ]);
    expect(await ok(["-n", "real", "logs", "reader"])).toBe("kept-across-pods\n");
    // The volume lives in the plane's own folder, not in the machine's /tmp.
    const path = await jsonpath(k, "real", ["pvc", "data"], "{.spec.volumeName}");
    const hostPath = (await ok(["get", "pv", path, "-o", "jsonpath={.spec.hostPath.path}"])).replace(
      /^\/tmp\//,
      "",
    );
    expect(readFileSync(`${plane.dir}/tmp/${hostPath}/proof`, "utf8")).toBe("kept-across-pods\n");
  });

  it("restarts a container whose process is killed from the host", async () => {
    // A duration no other process on the machine is likely to sleep, so the host finds this one.
    const command = `sleep ${3000 + Math.floor(Math.random() * 900)}`;
    await ok([
      "-n",
      "real",
      "create",
      "deployment",
      "sleeper",
      `--image=${tools}`,
      "--",
      ...command.split(" "),
    ]);
    await ok(["-n", "real", "rollout", "status", "deployment/sleeper", "--timeout=180s"]);
    const pid = hostPidOf(command);
    expect(pid).toBeGreaterThan(1);
    process.kill(pid, "SIGKILL");
    await pollUntil(
      async () =>
        (await jsonpath(
          k,
          "real",
          ["pods", "-l", "app=sleeper"],
          "{.items[0].status.containerStatuses[0].restartCount}",
        )) === "1" &&
        (await jsonpath(
          k,
          "real",
          ["pods", "-l", "app=sleeper"],
          "{.items[0].status.containerStatuses[0].ready}",
        )) === "true",
      { timeoutMs: 60_000, message: "the killed container restarted and Ready" },
    );
  });

  // Last: once the kubelet has pulled an image from a registry, it verifies every other name of
  // the same image against its registry too (KubeletEnsureSecretPulledImages), so a loaded name
  // such as kubeloop.local/tools would then be pulled, and fail.
  it("pulls from the plane's registry what was pushed to it", async () => {
    // Push the tools image from node-0's store with containerd's own client, under the registry's
    // name; `imagePullPolicy: Always` makes the kubelet resolve it in the registry all the same.
    const ctr = join(defaultAssetsRoot(), "containerd-v2.3.4", "ctr");
    const [socket] = plane.containerRuntimeSockets;
    const pushed = `${plane.registry}/tools:pushed`;
    const ctrArgs = ["--address", socket as string, "-n", "k8s.io", "images"];
    execFileSync(ctr, [...ctrArgs, "tag", tools, pushed]);
    execFileSync(ctr, [...ctrArgs, "push", "--plain-http", pushed], { stdio: "pipe" });
    const pod = await runIn("pulled", pushed, "echo pulled-from-registry", {}, { imagePullPolicy: "Always" });
    expect(pod).toEqual({ phase: "Succeeded", logs: "pulled-from-registry\n" });
  });
});

/** The host's pid of the process whose command line is `command` (containers share the host's pid space here). */
function hostPidOf(command: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
      if (cmdline === command) return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return 0;
}

/**
 * An HTTP server on 10.97.0.2 in a network namespace of its own, linked to this machine by a veth
 * pair: an address the machine reaches that is neither its own nor the cluster's.
 */
async function startStranger(): Promise<{ url: string; [Symbol.asyncDispose]: () => Promise<void> }> {
  const name = `klstranger${Math.floor(Math.random() * 10000)}`;
  const sh = (command: string) => execSync(command, { stdio: "pipe" });
  sh(`ip netns add ${name}`);
  sh(`ip link add ${name} type veth peer name eth0 netns ${name}`);
  sh(`ip addr add 10.97.0.1/30 dev ${name} && ip link set ${name} up`);
  sh(
    `ip -n ${name} addr add 10.97.0.2/30 dev eth0 && ip -n ${name} link set eth0 up && ip -n ${name} link set lo up`,
  );
  sh(`ip -n ${name} route add default via 10.97.0.1`);
  const server = spawn("ip", ["netns", "exec", name, "python3", "-c", STRANGER_SERVER], {
    stdio: "ignore",
    detached: true,
  });
  const url = "http://10.97.0.2:8000/";
  await pollUntil(async () => (await fetch(url).catch(() => undefined))?.ok === true, {
    timeoutMs: 30_000,
    message: "the stranger's server",
  });
  return {
    url,
    [Symbol.asyncDispose]: async () => {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      if (server.pid) process.kill(-server.pid, "SIGKILL");
      await exited;
      sh(`ip netns delete ${name}`);
    },
  };
}

const STRANGER_SERVER = `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"stranger")
    def log_message(self, *args): pass
http.server.HTTPServer(("10.97.0.2", 8000), H).serve_forever()
`;

/** Runs `kubectl port-forward` until stopped; resolves once it says which local port it took. */
function portForward(args: string[]): Promise<{ port: number; stop: () => void }> {
  return new Promise((resolvePort, reject) => {
    const child = spawn("kubectl", args, { stdio: ["ignore", "pipe", "pipe"], env: process.env });
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(output);
      if (match) resolvePort({ port: Number(match[1]), stop: () => child.kill("SIGTERM") });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`kubectl port-forward exited (${code}): ${output}`)));
  });
}
