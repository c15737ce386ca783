// A soak's samples, read back: each replica's life split where its process restarted (a restart
// starts a new heap), and the heap trend of each life after warm-up.

/**
 * Splits one replica's samples (in time order) into the lives of its processes: a new life starts
 * where the process id or the supervisor's `incarnation` changes; for samples with neither (older
 * runs), where the process's counters start over or its RSS falls by a fifth at once.
 */
export function lives(samples) {
  const result = [];
  let current = [];
  for (const sample of samples) {
    const previous = current.at(-1);
    const restarted = previous && startedOver(previous, sample);
    if (restarted) {
      result.push(current);
      current = [];
    }
    current.push(sample);
  }
  if (current.length) result.push(current);
  return result;
}

function startedOver(previous, sample) {
  if (sample.pid !== undefined && previous.pid !== undefined) return sample.pid !== previous.pid;
  if (sample.incarnation !== undefined) return sample.incarnation !== previous.incarnation;
  return (
    sample.lists < previous.lists ||
    sample.poolReplacements < previous.poolReplacements ||
    sample.rss < previous.rss * 0.8
  );
}

/** Least-squares slope of `field` per minute. */
export function slope(points, field) {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((sum, p) => sum + p.minute, 0) / n;
  const my = points.reduce((sum, p) => sum + p[field], 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.minute - mx) * (p[field] - my);
    den += (p.minute - mx) ** 2;
  }
  return den ? num / den : 0;
}

/**
 * The heap trend of a replica: over its longest life, after that life's first quarter (warm-up),
 * in MiB per hour; with the minutes it covers.
 */
export function heapTrend(samples) {
  const longest = lives(samples).sort((a, b) => b.length - a.length)[0] ?? [];
  const span = (longest.at(-1)?.minute ?? 0) - (longest[0]?.minute ?? 0);
  const warm = longest.filter((s) => s.minute >= longest[0].minute + span / 4);
  const mib = (bytes) => Math.round((bytes / 2 ** 20) * 100) / 100;
  return {
    lives: lives(samples).length,
    fromMinute: Math.round((warm[0]?.minute ?? 0) * 10) / 10,
    toMinute: Math.round((warm.at(-1)?.minute ?? 0) * 10) / 10,
    heapSlopeMiBPerHour: mib(slope(warm, "heapUsed") * 60),
    rssSlopeMiBPerHour: mib(slope(warm, "rss") * 60),
    heapMiB: { first: mib(warm[0]?.heapUsed ?? 0), last: mib(warm.at(-1)?.heapUsed ?? 0) },
  };
}
