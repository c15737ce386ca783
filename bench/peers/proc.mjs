// The operator process a peers run measures (bench/peers.mjs): its stdout lines, awaited as they
// come, and its RSS sampled from /proc every 100 ms.
import { spawn } from "node:child_process";
import { procStats } from "../stats.mjs";

/** A child process whose stdout lines are kept and can be awaited. */
export class Proc {
  constructor(name, argv, env) {
    this.name = name;
    this.lines = [];
    this.waiters = [];
    this.peakRss = 0;
    this.startedAt = performance.now();
    this.child = spawn(argv[0], argv.slice(1), {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.stderr = "";
    this.exited = new Promise((resolve) => this.child.on("exit", resolve));
    let buffered = "";
    this.child.stdout.setEncoding("utf8").on("data", (chunk) => {
      buffered += chunk;
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      for (const line of parts) this.line(line);
    });
    this.child.stderr.setEncoding("utf8").on("data", (chunk) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    this.sampler = setInterval(() => this.sample(), 100);
  }
  line(text) {
    const at = performance.now();
    this.lines.push({ text, at });
    if (text.startsWith("STATS "))
      this.stats = {
        ...this.stats, // the breakdown comes on every fifth line; keep the last one seen
        ...Object.fromEntries(
          text
            .slice(6)
            .split(" ")
            .map((kv) => [kv.split("=")[0], Number(kv.split("=")[1])]),
        ),
      };
    for (const waiter of [...this.waiters]) {
      if (waiter.match(text)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve({ text, at });
      }
    }
  }
  sample() {
    const s = procStats(this.child.pid);
    if (s) this.peakRss = Math.max(this.peakRss, s.rss);
    return s;
  }
  resetPeak() {
    this.peakRss = this.sample()?.rss ?? 0;
  }
  /** Resolves with the first line (from now on, or already seen if `past`) that matches. */
  waitFor(match, timeoutMs, past = false) {
    const test = typeof match === "string" ? (t) => t.startsWith(match) : match;
    if (past) {
      const seen = this.lines.find((l) => test(l.text));
      if (seen) return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(
          new Error(
            `${this.name}: no "${match}" within ${timeoutMs / 1000} s; stderr: ${this.stderr.slice(-1500)}`,
          ),
        );
      }, timeoutMs);
      const done = (value) => {
        clearTimeout(timer);
        resolve(value);
      };
      this.waiters.push({ match: test, resolve: done });
      this.child.once("exit", (code) => {
        clearTimeout(timer);
        reject(
          new Error(`${this.name} exited (${code}) before "${match}"; stderr: ${this.stderr.slice(-1500)}`),
        );
      });
    });
  }
  async stop() {
    clearInterval(this.sampler);
    if (this.child.exitCode === null) {
      this.child.kill("SIGTERM");
      const killer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
      await this.exited;
      clearTimeout(killer);
    }
  }
}
