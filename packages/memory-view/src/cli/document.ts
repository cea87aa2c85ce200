// What the program shows of a replay: the figures table (text and the view's), the subtitle naming the
// device the trace's header records, the PyTorch facts, and the page that holds several traces' views.
import { formatBytes, MEMORY_STATS_FIELDS, printable } from "@nuvec/stats";
import type { PolicyOutcome, ReplayDevice, ViewReplayResult } from "../replay/replay.js";
import type { TorchWorkload } from "../snapshot/torch-snapshot.js";
import type { FigureTable } from "../view/render.js";

/** One trace replayed: its name, the replay, and the PyTorch snapshot it came from (if it did). */
export interface ReplayedTrace {
  name: string;
  result: ViewReplayResult;
  torch: TorchWorkload | undefined;
}

const FIGURE_ROWS: { label: string; bytes: boolean; of: (outcome: PolicyOutcome) => number }[] = [
  { label: "peak active", bytes: true, of: (outcome) => outcome.stats.peakActive },
  { label: "peak reserved", bytes: true, of: (outcome) => outcome.peakReserved },
  { label: "system allocations", bytes: false, of: (outcome) => outcome.systemAllocations },
  { label: "cache hits", bytes: false, of: (outcome) => outcome.cacheHits },
  { label: "refused (out of memory)", bytes: false, of: (outcome) => outcome.outOfMemoryRefusals },
];

/** The device line: what the header records (or the defaults), as the view's subtitle says it. */
export function deviceLine(device: ReplayDevice): string {
  const parts = [
    `working set ${formatBytes(device.workingSet)}`,
    `memory ${formatBytes(device.memorySize)}`,
    `page ${formatBytes(device.pageSize)}`,
  ];
  if (device.policy !== undefined) parts.push(`recorded under ${device.policy}`);
  if (device.memoryLimit !== undefined) parts.push(`memory limit ${formatBytes(device.memoryLimit)}`);
  if (device.cacheLimit !== undefined) parts.push(`cache limit ${formatBytes(device.cacheLimit)}`);
  if (device.mapGranularity !== undefined)
    parts.push(`map granularity ${formatBytes(device.mapGranularity)}`);
  const who =
    device.from === "header"
      ? `device ${device.name === undefined ? "" : `${printable(device.name, 60)} `}(from the trace's header)`
      : "device (defaults: the header records none)";
  return `${who}: ${parts.join(", ")}`;
}

/** The view's subtitle: the workload the header names, then the device. */
export function subtitleOf(trace: ReplayedTrace): string {
  const workload = trace.result.header?.workload;
  const device = deviceLine(trace.result.device);
  return typeof workload === "string" && workload !== "" ? `${printable(workload, 120)} · ${device}` : device;
}

/**
 * The figures beside one trace's chart: a column per policy (and PyTorch's, for a snapshot), the comparison
 * rows, then every `MemoryStats` field at the end.
 */
export function figureTable(trace: ReplayedTrace): FigureTable {
  const { outcomes } = trace.result;
  const torch = trace.torch;
  const extra = torch === undefined ? [] : ["PyTorch"];
  const rows: FigureTable["rows"] = FIGURE_ROWS.map((row) => ({
    label: row.label,
    bytes: row.bytes,
    values: [
      ...outcomes.map(row.of),
      ...extra.map(() => (row.label === "peak reserved" ? (torch as TorchWorkload).peakReserved : "")),
    ],
  }));
  rows.push({ label: "MemoryStats at the end", values: [] });
  for (const name of MEMORY_STATS_FIELDS) {
    rows.push({
      label: name,
      bytes: name !== "systemAllocations",
      values: [...outcomes.map((outcome) => outcome.stats[name]), ...extra.map(() => "")],
    });
  }
  return { columns: [...outcomes.map((outcome) => outcome.policy), ...extra], rows };
}

/** The facts under the figures: the marks, and a PyTorch snapshot's own counts. */
export function factsOf(trace: ReplayedTrace): [string, string][] {
  const facts: [string, string][] = [["device", deviceLine(trace.result.device)]];
  if (trace.result.marks > 0) facts.push(["marks", String(trace.result.marks)]);
  if (trace.torch !== undefined) facts.push(...torchFacts(trace.torch));
  return facts;
}

/** A PyTorch snapshot's own facts for the view: its device, its peak reserved memory, its counts. */
export function torchFacts(torch: TorchWorkload): [string, string][] {
  const { counts } = torch;
  return [
    ["PyTorch device", `${torch.device} (devices with a trace: ${torch.devices.join(", ")})`],
    ["PyTorch peak reserved", formatBytes(torch.peakReserved)],
    ["PyTorch reserved when recording began", formatBytes(torch.reservedAtStart)],
    ["allocations / frees", `${counts.allocations} / ${counts.frees}`],
    ["frees of blocks allocated before recording (skipped)", String(counts.skippedFrees)],
    ["live at the end", String(counts.liveAtEnd)],
    ["segment allocations / frees", `${counts.segmentAllocs} / ${counts.segmentFrees}`],
    ["other trace entries (not replayed)", String(counts.otherEntries)],
  ];
}

/** The figures as text: one column per trace and policy, the row labels first. */
export function textTable(traces: ReplayedTrace[]): string {
  const width = 14;
  const label = 24;
  const columns: { head: string; outcome: PolicyOutcome | undefined; torch?: TorchWorkload }[] = [];
  traces.forEach((trace, index) => {
    const prefix = traces.length > 1 ? `${index + 1}:` : "";
    for (const outcome of trace.result.outcomes)
      columns.push({ head: `${prefix}${outcome.policy}`, outcome });
    if (trace.torch !== undefined)
      columns.push({ head: `${prefix}PyTorch`, outcome: undefined, torch: trace.torch });
  });
  const lines = traces.map(
    (trace, index) =>
      `${traces.length > 1 ? `${index + 1}: ` : ""}${printable(trace.name, 60)}: ${trace.result.workloadEvents} events; ${deviceLine(trace.result.device)}`,
  );
  lines.push(`${"".padEnd(label)}${columns.map((column) => column.head.padStart(width)).join("")}`);
  for (const row of FIGURE_ROWS) {
    const values = columns.map((column) => {
      if (column.outcome === undefined)
        return row.label === "peak reserved" && column.torch ? formatBytes(column.torch.peakReserved) : "";
      const value = row.of(column.outcome);
      return row.bytes ? formatBytes(value) : String(value);
    });
    lines.push(`${row.label.padEnd(label)}${values.map((value) => value.padStart(width)).join("")}`);
  }
  return lines.join("\n");
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/**
 * Several traces' views in one file: each view a document of its own in an `<iframe srcdoc>` (it opens
 * offline, as one view does), under one table of every trace's figures.
 */
export function comparisonPage(traces: ReplayedTrace[], views: string[]): string {
  const heads = traces.flatMap((trace, index) =>
    trace.result.outcomes.map((outcome) => `${index + 1}: ${outcome.policy}`),
  );
  const rows = FIGURE_ROWS.map((row) => {
    const cells = traces.flatMap((trace) =>
      trace.result.outcomes.map((outcome) => {
        const value = row.of(outcome);
        return `<td data-value="${value}">${row.bytes ? formatBytes(value) : String(value)}</td>`;
      }),
    );
    return `<tr><th>${escapeHtml(row.label)}</th>${cells.join("")}</tr>`;
  });
  const names = traces
    .map(
      (trace, index) =>
        `<li>${index + 1}: ${escapeHtml(trace.name)} (${trace.result.workloadEvents} events)</li>`,
    )
    .join("");
  const frames = views
    .map(
      (view, index) =>
        `<h2>${index + 1}: ${escapeHtml((traces[index] as ReplayedTrace).name)}</h2>\n<iframe class="nuvec-view" title="memory view ${index + 1}" srcdoc="${escapeHtml(view)}"></iframe>`,
    )
    .join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memory views: ${escapeHtml(traces.map((trace) => trace.name).join(", "))}</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 16px 20px; color: #111827; }
h1 { font-size: 19px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 18px 0 4px; }
table { border-collapse: collapse; font-size: 12px; }
th { text-align: left; font-weight: 500; padding: 2px 10px 2px 0; }
td { text-align: right; padding: 2px 0 2px 14px; font-variant-numeric: tabular-nums; }
thead th { text-align: right; font-weight: 600; }
iframe.nuvec-view { width: 100%; height: 820px; border: 1px solid #e5e7eb; }
</style>
</head>
<body>
<h1>memory views of ${traces.length} traces</h1>
<ol style="list-style: none; padding: 0">${names}</ol>
<table id="nuvec-comparison"><thead><tr><th></th>${heads.map((head) => `<th>${escapeHtml(head)}</th>`).join("")}</tr></thead><tbody>${rows.join("")}</tbody></table>
${frames}
</body>
</html>
`;
}
