// Draws the autopilot run (examples/nginx/test/autopilot.test.ts's AUTOPILOT_SAMPLES JSON) as an
// SVG: the operator's replicas (ready, and what the HPA wants) with the HPA's reading of the work
// rate, the queue depth, and the p90 reconcile time and queue wait, over time; the churn shaded.
// Run: node bench/chaos/plot-autopilot.mjs autopilot.json docs/autopilot.svg
import { readFileSync, writeFileSync } from "node:fs";

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node bench/chaos/plot-autopilot.mjs <autopilot.json> <plot.svg>");
  process.exit(2);
}
const run = JSON.parse(readFileSync(input, "utf8"));
const samples = run.samples ?? [];
if (samples.length === 0) {
  console.error(`${input} holds no samples: is it an AUTOPILOT_SAMPLES file?`);
  process.exit(1);
}

const width = 1000;
const panelHeight = 170;
const margin = { left: 70, right: 200, top: 90, gap: 40 };
const plotWidth = width - margin.left - margin.right;
const maxT = Math.max(...samples.map((s) => s.t));
const x = (t) => margin.left + (t / maxT) * plotWidth;
const esc = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;");
const panels = [
  {
    title: "replicas, and reconciles/s per pod (HPA)",
    series: [
      { field: "replicas", label: "ready replicas", colour: "#1f77b4", step: true },
      { field: "desired", label: "HPA desired", colour: "#9467bd", step: true, dash: "4,3" },
      {
        field: "metric",
        label: `reconciles/s per pod ÷ ${run.target}`,
        colour: "#2ca02c",
        scale: 1 / run.target,
      },
    ],
  },
  {
    title: "queue depth (keys waiting, all replicas)",
    series: [{ field: "queueDepth", label: "queue depth", colour: "#d62728" }],
  },
  {
    title: "p90 latency (ms, last 15 s)",
    series: [
      { field: "reconcileP90Ms", label: "reconcile time", colour: "#ff7f0e" },
      { field: "queueWaitP90Ms", label: "queue wait", colour: "#8c564b" },
    ],
  },
];
const subtitle = [
  `${run.objects} Nginx, ${run.rate} spec changes/s (shaded)`,
  `target ${run.target} reconciles/s per pod`,
  ...(run.failed
    ? ["the run FAILED (its samples up to then)"]
    : [
        `≥ 2 replicas ${Math.round(run.upAfterMs / 1000)} s after the churn began, peak ${run.peak}, back to 1 ${Math.round(run.downAfterMs / 1000)} s after it`,
        `${run.lost} lost updates, ${run.overlaps} overlapping reconciles of ${run.reconciles}`,
      ]),
];
const height = margin.top + panels.length * (panelHeight + margin.gap) + 10;
const parts = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans, sans-serif" font-size="12">`,
  "<title>kubeloop autopilot: replicas, queue depth and latency over time</title>",
  `<rect width="${width}" height="${height}" fill="white"/>`,
  `<text x="${margin.left}" y="24" font-size="16">kubeloop autopilot: the sharded nginx operator scaled by its HPA on its own work rate</text>`,
  ...[subtitle.slice(0, 2).join("; "), subtitle.slice(2).join("; ")].map(
    (line, i) => `<text x="${margin.left}" y="${42 + i * 16}" fill="#444">${esc(line)}</text>`,
  ),
];
const churn = samples.filter((s) => s.phase === "churn");
panels.forEach((panel, index) => {
  const top = margin.top + index * (panelHeight + margin.gap);
  const value = (s, series) => (s[series.field] == null ? null : s[series.field] * (series.scale ?? 1));
  const values = panel.series.flatMap((series) =>
    samples.map((s) => value(s, series)).filter((v) => v !== null),
  );
  const maxValue = Math.max(1, Math.ceil(Math.max(...values, 0) * 1.15));
  const y = (v) => top + panelHeight - (v / maxValue) * panelHeight;
  if (churn.length)
    parts.push(
      `<rect x="${x(churn[0].t)}" y="${top}" width="${x(churn.at(-1).t) - x(churn[0].t)}" height="${panelHeight}" fill="#fff3d6"/>`,
    );
  parts.push(
    `<rect x="${margin.left}" y="${top}" width="${plotWidth}" height="${panelHeight}" fill="none" stroke="#999"/>`,
    `<text x="${margin.left}" y="${top - 6}" fill="#222">${esc(panel.title)}</text>`,
  );
  for (let i = 0; i <= 4; i++) {
    const v = (maxValue * i) / 4;
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`,
      `<text x="${margin.left - 8}" y="${y(v) + 4}" text-anchor="end">${Number(v.toFixed(1))}</text>`,
    );
  }
  const step = maxT > 600 ? 120 : maxT > 240 ? 60 : 30;
  for (let t = 0; t <= maxT; t += step)
    parts.push(`<text x="${x(t)}" y="${top + panelHeight + 16}" text-anchor="middle">${t} s</text>`);
  panel.series.forEach((series, n) => {
    let path = "";
    let previous;
    for (const s of samples) {
      const v = value(s, series);
      if (v === null) {
        previous = undefined;
        continue;
      }
      if (previous === undefined) path += `M${x(s.t)},${y(v)}`;
      else path += series.step ? `H${x(s.t)}V${y(v)}` : `L${x(s.t)},${y(v)}`;
      previous = v;
    }
    parts.push(
      `<path d="${path}" fill="none" stroke="${series.colour}" stroke-width="2"${series.dash ? ` stroke-dasharray="${series.dash}"` : ""}/>`,
      `<line x1="${margin.left + plotWidth + 12}" x2="${margin.left + plotWidth + 32}" y1="${top + 14 + n * 18}" y2="${top + 14 + n * 18}" stroke="${series.colour}" stroke-width="2"/>`,
      `<text x="${margin.left + plotWidth + 38}" y="${top + 18 + n * 18}">${esc(series.label)}</text>`,
    );
  });
});
parts.push("</svg>");
writeFileSync(output, `${parts.join("\n")}\n`);
console.log(`wrote ${output} (${samples.length} samples over ${maxT} s)`);
