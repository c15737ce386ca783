// The machine's programs some tasks need beside Node and the Kubernetes binaries, installed from
// Debian's packages when missing (as bootstrap.mjs does for the workspace):
//   - PostgreSQL's server and clients (the pgdatabase example's tests and demo): npm's builds of
//     PostgreSQL ship the server alone, and the operator backs up with pg_dump and pg_restore of
//     the server's own major version, which Debian ships beside it (postgresql, postgresql-client);
//   - promtool (Prometheus' rule tester) and the Prometheus server, Debian's `prometheus` package,
//     for the alerts of the example and of kubeloop's generated monitoring (kubeloop/testing's
//     PrometheusServer and promtool());
//   - Chromium, Debian's `chromium`, at /usr/bin/chromium: the book's test opens the built site in
//     it, headless, through playwright-core (about two minutes to install, once);
//   - the real nodes' host side (the control plane's `node` profile): iptables for kube-proxy and
//     the plane's FORWARD rules, and a C toolchain with libseccomp's headers to build runc (with
//     seccomp, which Pod Security `restricted` needs) and the pause binary.
// Plain JavaScript with no dependencies, like bootstrap.mjs: it runs before the workspace exists.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const POSTGRES_BINARIES = ["postgres", "initdb", "pg_dump", "pg_restore", "psql"];

/** What each need looks for, and the Debian packages that bring it. */
const NEEDS = {
  postgres: {
    what: "PostgreSQL (postgres, initdb, pg_dump, pg_restore, psql)",
    present: () => {
      const explicit = process.env.KUBELOOP_POSTGRES_BIN;
      if (explicit) return POSTGRES_BINARIES.every((name) => existsSync(join(explicit, name)));
      let majors = [];
      try {
        majors = readdirSync("/usr/lib/postgresql");
      } catch {
        return false;
      }
      return majors.some((major) =>
        POSTGRES_BINARIES.every((name) => existsSync(join("/usr/lib/postgresql", major, "bin", name))),
      );
    },
    packages: ["postgresql", "postgresql-client"],
  },
  chromium: {
    what: "Chromium (the book's browser test opens the built site in it, headless)",
    present: () => existsSync("/usr/bin/chromium"),
    packages: ["chromium"],
  },
  nodeStack: {
    what: "the real nodes' tools (iptables; gcc, pkg-config and libseccomp's headers to build runc)",
    present: () =>
      onPath("iptables") &&
      onPath("gcc") &&
      onPath("pkg-config") &&
      spawnSync("pkg-config", ["--exists", "libseccomp"]).status === 0 &&
      existsSync("/usr/include/stdio.h"),
    packages: ["iptables", "gcc", "libc6-dev", "pkg-config", "libseccomp-dev"],
  },
  promtool: {
    what: "Prometheus (promtool and the server)",
    present: () =>
      (Boolean(process.env.PROMTOOL) || onPath("promtool")) &&
      (Boolean(process.env.PROMETHEUS) || onPath("prometheus")),
    packages: ["prometheus"],
  },
};

/** The needs of each README task. */
export const TASK_NEEDS = {
  test: ["postgres", "promtool", "chromium", "nodeStack"],
  "demo:sampledb": ["nodeStack"],
  "demo:pgdatabase": ["postgres"],
  "bench:pgdatabase": ["postgres"],
  "bench:sampledb": ["nodeStack"],
};

function onPath(binary) {
  return (process.env.PATH ?? "").split(":").some((dir) => dir && existsSync(join(dir, binary)));
}

/**
 * Installs the Debian packages of the task's missing needs when it can (root, apt-get). Otherwise
 * prints what to install; the tests that need it then fail with the same advice.
 */
export function ensureSystemPackages(task) {
  const missing = (TASK_NEEDS[task] ?? []).map((name) => NEEDS[name]).filter((need) => !need.present());
  if (missing.length === 0) return;
  const packages = missing.flatMap((need) => need.packages);
  const what = missing.map((need) => need.what).join(" and ");
  const canInstall = process.getuid?.() === 0 && onPath("apt-get");
  if (!canInstall) {
    console.error(
      `[kubeloop] ${what} not found. Install it: sudo apt-get install --no-install-recommends ${packages.join(" ")}`,
    );
    return;
  }
  console.error(`[kubeloop] installing ${what} (apt-get install ${packages.join(" ")})…`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const args = ["install", "-y", "-qq", "--no-install-recommends", ...packages];
  const install = update.status === 0 ? spawnSync("apt-get", args, { stdio: "inherit", env }) : update;
  if (install.status !== 0)
    console.error(`[kubeloop] apt-get install ${packages.join(" ")} failed; see the output above.`);
}
