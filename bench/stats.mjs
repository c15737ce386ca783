// What the benchmark scripts share: order statistics, and a process's CPU and memory from /proc.
import { readFileSync } from "node:fs";

/** The median of the finite values (the mean of the two middle ones for an even count). */
export function median(xs) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return Number.NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** The value below which a fraction `q` of the values lie (nearest rank). */
export function quantile(xs, q) {
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.floor(q * v.length))];
}

const CLOCK_TICK = 100; // USER_HZ on Linux

/** CPU seconds (user + system), RSS and peak RSS in bytes of a process; undefined once it is gone. */
export function procStats(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return {
      cpu: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICK,
      rss: kb("VmRSS") * 1024,
      peakRss: kb("VmHWM") * 1024,
    };
  } catch {
    return undefined;
  }
}
