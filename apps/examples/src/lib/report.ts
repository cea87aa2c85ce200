// A self-contained HTML report: a timeline of active, cache, wired and mapped bytes drawn as inline SVG
// (no script, no external file, so it renders anywhere, headless browsers included), and tables of stats.
import { formatBytes, MEMORY_STATS_FIELDS, type MemoryStats } from "@nuvec/stats";

/** One point of the timeline. */
export interface TimelineSample {
  /** The x coordinate: an event index or milliseconds. */
  x: number;
  active: number;
  cache: number;
  wired: number;
  mapped: number;
}

/** A named phase (loading, wiring, workload, …) that starts at `x`. */
export interface TimelinePhase {
  name: string;
  x: number;
}

/** What a report shows. */
export interface ReportInput {
  title: string;
  subtitle?: string;
  xLabel: string;
  samples: TimelineSample[];
  phases?: TimelinePhase[];
  /** Statistics tables, one per phase or run. */
  tables?: { title: string; stats: MemoryStats }[];
  /** Extra rows of facts (label → value) under the chart. */
  facts?: [string, string][];
}

const SERIES = [
  { key: "active", label: "active", color: "#2563eb" },
  { key: "cache", label: "cache", color: "#f59e0b" },
  { key: "wired", label: "wired", color: "#16a34a" },
  { key: "mapped", label: "mapped", color: "#9333ea" },
] as const;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** Keeps at most `limit` samples, evenly spaced, always including the extremes of each series' peak. */
function thin(samples: TimelineSample[], limit: number): TimelineSample[] {
  if (samples.length <= limit) return samples;
  const step = samples.length / limit;
  const kept: TimelineSample[] = [];
  for (let index = 0; index < limit; index += 1) {
    const from = Math.floor(index * step);
    const to = Math.min(samples.length, Math.floor((index + 1) * step));
    // The highest point of each bucket, so thinning never hides a peak.
    let best = samples[from] as TimelineSample;
    for (let at = from; at < to; at += 1) {
      const sample = samples[at] as TimelineSample;
      if (sample.active + sample.cache > best.active + best.cache) best = sample;
    }
    kept.push(best);
  }
  return kept;
}

/** The report as one HTML document. */
export function renderReport(input: ReportInput): string {
  const width = 960;
  const height = 360;
  const margin = { left: 80, right: 20, top: 20, bottom: 56 };
  const samples = thin(input.samples, 1500);
  const xs = samples.map((sample) => sample.x);
  const minX = Math.min(...xs, 0);
  const maxX = Math.max(...xs, 1);
  const maxY = Math.max(1, ...samples.flatMap((sample) => SERIES.map((series) => sample[series.key])));
  const scaleX = (x: number) =>
    margin.left + ((x - minX) / (maxX - minX || 1)) * (width - margin.left - margin.right);
  const scaleY = (y: number) => height - margin.bottom - (y / maxY) * (height - margin.top - margin.bottom);

  const paths = SERIES.map((series) => {
    // Steps, not slopes: a value holds until the next sample (memory does not ramp between two samples).
    const points: string[] = [];
    samples.forEach((sample, index) => {
      const x = scaleX(sample.x).toFixed(1);
      const previous = samples[index - 1];
      if (previous !== undefined) points.push(`${x},${scaleY(previous[series.key]).toFixed(1)}`);
      points.push(`${x},${scaleY(sample[series.key]).toFixed(1)}`);
    });
    return `<polyline class="series series-${series.key}" fill="none" stroke="${series.color}" stroke-width="2" points="${points.join(" ")}"><title>${series.label}</title></polyline>`;
  }).join("\n");

  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((fraction) => {
      const y = scaleY(maxY * fraction);
      return `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y}" y2="${y}" stroke="#e5e7eb"/><text x="${margin.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${escapeHtml(formatBytes(Math.round(maxY * fraction)))}</text>`;
    })
    .join("\n");

  // Labels step down one line per phase, so phases close together stay readable.
  const phases = (input.phases ?? [])
    .map((phase, index) => {
      const x = scaleX(phase.x);
      const y = margin.top + 12 + (index % 6) * 13;
      return `<line class="phase" x1="${x}" x2="${x}" y1="${margin.top}" y2="${height - margin.bottom}" stroke="#6b7280" stroke-dasharray="4 3"/><text x="${x + 4}" y="${y}" font-size="11" fill="#374151">${escapeHtml(phase.name)}</text>`;
    })
    .join("\n");

  const xTicks = [0, 0.25, 0.5, 0.75, 1]
    .map((fraction) => {
      const value = minX + (maxX - minX) * fraction;
      const x = scaleX(value);
      const anchor = fraction === 0 ? "start" : fraction === 1 ? "end" : "middle";
      return `<text x="${x}" y="${height - margin.bottom + 14}" text-anchor="${anchor}" font-size="11">${Math.round(value)}</text>`;
    })
    .join("\n");

  const legend = SERIES.map(
    (series, index) =>
      `<g transform="translate(${margin.left + index * 110}, ${height - 12})"><rect width="12" height="12" y="-10" fill="${series.color}"/><text x="16" font-size="12">${series.label}</text></g>`,
  ).join("\n");

  const tables = (input.tables ?? [])
    .map(
      ({ title, stats }) =>
        `<table><caption>${escapeHtml(title)}</caption>${MEMORY_STATS_FIELDS.map((field) => `<tr><th>${field}</th><td>${field === "systemAllocations" ? stats[field] : escapeHtml(formatBytes(stats[field]))}</td><td class="exact">${stats[field]}</td></tr>`).join("")}</table>`,
    )
    .join("\n");

  const facts = (input.facts ?? [])
    .map(([label, value]) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`)
    .join("");

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(input.title)}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 24px; color: #111827; }
h1 { font-size: 20px; margin: 0 0 4px; }
p.subtitle { color: #4b5563; margin: 0 0 16px; }
svg { background: #fff; border: 1px solid #e5e7eb; }
.tables { display: flex; flex-wrap: wrap; gap: 16px; margin-top: 16px; }
table { border-collapse: collapse; font-size: 12px; }
caption { font-weight: 600; text-align: left; padding: 4px 0; }
th { text-align: left; font-weight: 500; padding: 2px 8px 2px 0; }
td { text-align: right; padding: 2px 0 2px 8px; font-variant-numeric: tabular-nums; }
td.exact { color: #6b7280; }
</style>
</head>
<body>
<h1>${escapeHtml(input.title)}</h1>
${input.subtitle ? `<p class="subtitle">${escapeHtml(input.subtitle)}</p>` : ""}
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="memory timeline">
${ticks}
${phases}
${paths}
${xTicks}
<text x="${(width + margin.left) / 2}" y="${height - 26}" text-anchor="middle" font-size="11" fill="#374151">${escapeHtml(input.xLabel)}</text>
${legend}
</svg>
${facts ? `<table class="facts">${facts}</table>` : ""}
<div class="tables">${tables}</div>
</body>
</html>
`;
}
