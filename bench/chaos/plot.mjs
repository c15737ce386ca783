// Draws a soak's samples (soak.mjs's JSONL) as a PNG: heap used and RSS of each replica over time,
// with the faults marked, and the heap slope after warm-up in the title. SVG drawn here, rendered
// by resvg (fonts: the system's DejaVu Sans).
// Run: node bench/chaos/plot.mjs soak.jsonl docs/soak.png
import { readFileSync, writeFileSync } from "node:fs";
import { Resvg } from "@resvg/resvg-js";
import { heapTrend, lives } from "./samples.mjs";

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node bench/chaos/plot.mjs <samples.jsonl> <plot.png>");
  process.exit(2);
}
const records = readFileSync(input, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line));
const samples = records.filter((r) => r.type === "sample");
const faults = records.filter((r) => r.type === "fault");
const summary = records.find((r) => r.type === "summary");
const start = records.find((r) => r.type === "start");
if (samples.length === 0) {
  console.error(`${input} holds no samples: is it a soak.mjs output?`);
  process.exit(1);
}

const width = 1000;
const panelHeight = 260;
const margin = { left: 70, right: 160, top: 95, bottom: 40 };
const replicas = [...new Set(samples.map((s) => s.replica))].sort();
const colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
const maxMinute = Math.max(...samples.map((s) => s.minute), start?.minutes ?? 0);
const panels = [
  { field: "heapUsed", title: "heap used (MiB)" },
  { field: "rss", title: "RSS (MiB)" },
];
const plotWidth = width - margin.left - margin.right;
const height = margin.top + panels.length * (panelHeight + margin.bottom) + 20;
const x = (minute) => margin.left + (minute / maxMinute) * plotWidth;
const esc = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;");

const parts = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans" font-size="12">`,
  `<rect width="${width}" height="${height}" fill="white"/>`,
];
const slopes = replicas
  .map((name) => {
    const trend = heapTrend(samples.filter((s) => s.replica === name));
    const sign = trend.heapSlopeMiBPerHour >= 0 ? "+" : "";
    return `${name} ${sign}${trend.heapSlopeMiBPerHour} MiB/h (min ${trend.fromMinute}–${trend.toMinute})`;
  })
  .join(", ");
parts.push(
  `<text x="${margin.left}" y="24" font-size="16">kubeloop soak: ${esc(start?.minutes ?? "?")} min, ${esc(start?.title ?? `${start?.widgets ?? "?"} Widgets, ${start?.rate ?? "?"} spec changes/s`)}, ${faults.length} faults</text>`,
  `<text x="${margin.left}" y="44" fill="#444">heap slope after warm-up (longest process life, after its first quarter):</text>`,
  `<text x="${margin.left}" y="62" fill="#444">${esc(slopes)}${summary ? "" : " (run not finished)"}</text>`,
);
panels.forEach((panel, index) => {
  const top = margin.top + index * (panelHeight + margin.bottom);
  const values = samples.map((s) => s[panel.field] / 2 ** 20);
  const maxValue = Math.ceil((Math.max(...values) * 1.1) / 20) * 20;
  const y = (value) => top + panelHeight - (value / maxValue) * panelHeight;
  parts.push(
    `<rect x="${margin.left}" y="${top}" width="${plotWidth}" height="${panelHeight}" fill="none" stroke="#999"/>`,
  );
  for (let i = 0; i <= 4; i++) {
    const value = (maxValue * i) / 4;
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${y(value)}" y2="${y(value)}" stroke="#eee"/>`,
      `<text x="${margin.left - 8}" y="${y(value) + 4}" text-anchor="end">${value.toFixed(0)}</text>`,
    );
  }
  for (const fault of faults)
    parts.push(
      `<line x1="${x(fault.minute)}" x2="${x(fault.minute)}" y1="${top}" y2="${top + panelHeight}" stroke="#f0b000" stroke-dasharray="3,3"/>`,
    );
  const step = maxMinute > 30 ? 10 : maxMinute > 10 ? 5 : 1;
  for (let minute = 0; minute <= maxMinute; minute += step)
    parts.push(
      `<text x="${x(minute)}" y="${top + panelHeight + 16}" text-anchor="middle">${minute} min</text>`,
    );
  parts.push(`<text x="${margin.left}" y="${top - 6}" font-size="13">${panel.title}</text>`);
  replicas.forEach((replica, r) => {
    // One line per process life: a replica restarted (a lost Lease) starts a new line.
    for (const life of lives(samples.filter((s) => s.replica === replica))) {
      const points = life.map((s) => `${x(s.minute).toFixed(1)},${y(s[panel.field] / 2 ** 20).toFixed(1)}`);
      parts.push(
        `<polyline points="${points.join(" ")}" fill="none" stroke="${colours[r % colours.length]}" stroke-width="1.5"/>`,
      );
    }
    if (index === 0)
      parts.push(
        `<line x1="${width - margin.right + 15}" x2="${width - margin.right + 35}" y1="${top + 20 + r * 18}" y2="${top + 20 + r * 18}" stroke="${colours[r % colours.length]}" stroke-width="2"/>`,
        `<text x="${width - margin.right + 40}" y="${top + 24 + r * 18}">${esc(replica)}</text>`,
      );
  });
  if (index === 0)
    parts.push(
      `<line x1="${width - margin.right + 15}" x2="${width - margin.right + 35}" y1="${top + 20 + replicas.length * 18}" y2="${top + 20 + replicas.length * 18}" stroke="#f0b000" stroke-dasharray="3,3"/>`,
      `<text x="${width - margin.right + 40}" y="${top + 24 + replicas.length * 18}">fault</text>`,
    );
});
parts.push("</svg>");
const png = new Resvg(parts.join("\n"), { font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" } })
  .render()
  .asPng();
writeFileSync(output, png);
console.log(`${output}: ${samples.length} samples, ${faults.length} faults`);
