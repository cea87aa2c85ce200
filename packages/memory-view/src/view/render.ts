// The memory view as one self-contained HTML file: the workload's allocations and each policy's figures
// (gzipped typed arrays, base64), uPlot's built file and the view's own code inlined. No network: the page
// opens from a file, offline, and draws in a fraction of a second on half a million events.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import { memoryViewClient } from "./client.js";
import { memoryViewAxes } from "./client-axes.js";
import { memoryViewData } from "./client-data.js";
import { memoryViewHover } from "./client-hover.js";
import { memoryViewCore } from "./core.js";
import { memoryViewDrawing } from "./drawing.js";
import type { RecordedWorkload } from "./recorder.js";
import { memoryViewTicks } from "./ticks.js";

/** The summary beside the chart: one column per policy (or source), one row per figure. */
export interface FigureTable {
  columns: string[];
  rows: { label: string; values: (number | string)[]; bytes?: boolean }[];
}

/** Everything one memory view shows. */
export interface MemoryViewDocument {
  title: string;
  subtitle?: string;
  /** The recorded workload and policies. */
  workload: RecordedWorkload;
  /** Labels of allocations (stack frames), indexed by `workload.label`. */
  labels?: string[];
  /** Stacks of allocations (their frames, innermost first), indexed by `workload.stack`. */
  stacks?: string[][];
  /** The figures table beside the chart. */
  figures: FigureTable;
  /** Per policy (same order as `workload.policies`): the reported peaks the chart marks. */
  peaks: { active: number; reserved: number }[];
  /** Extra facts (label, value) under the figures. */
  facts?: [string, string][];
  /** The name of the x axis; default `"event"`, or the marks' when the workload has marks. */
  xLabel?: string;
}

const require = createRequire(import.meta.url);

/** uPlot's built script and stylesheet, read from the installed package, and its licence's notice. */
function uplotFiles(): { script: string; style: string; notice: string } {
  const script = readFileSync(require.resolve("uplot/dist/uPlot.iife.min.js"), "utf8");
  const style = readFileSync(require.resolve("uplot/dist/uPlot.min.css"), "utf8");
  const licence = readFileSync(require.resolve("uplot/LICENSE"), "utf8");
  return { script, style, notice: licence.replace(/--/g, "- -") };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** JSON that is safe inside a `<script>` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/\u2028|\u2029/g, "");
}

type Typed = Float64Array | Uint32Array | Int32Array | Uint8Array;

type Layout = [string, string, number, number, string?][];

/**
 * How an event index array is stored: `"delta"`, each value less the one before it (the arrays of events
 * that never decrease); `"after:NAME"`, each value less NAME's at the same index (an allocation's end after
 * its start). Small numbers that repeat: gzip makes a fraction of the bytes of the indices themselves, and
 * the page parses and inflates that much less.
 */
function codingOf(name: string): string | undefined {
  if (name === "end") return "after:start";
  return /^(start|markAt|mappedAt|reservedAt\d+|externalAt\d+)$/.test(name) ? "delta" : undefined;
}

/** `array` stored as `coding` says (`arrays`: those already stored, by name, as they were given). */
function encoded(array: Typed, coding: string | undefined, given: Map<string, Typed>): Typed {
  if (coding === undefined) return array;
  const out = new Uint32Array(array.length);
  if (coding === "delta") {
    for (let index = 0; index < array.length; index += 1)
      out[index] = (array[index] as number) - (index === 0 ? 0 : (array[index - 1] as number));
  } else {
    const base = given.get(coding.slice("after:".length)) as Typed;
    for (let index = 0; index < array.length; index += 1)
      out[index] = (array[index] as number) - (base[index] as number);
  }
  return out;
}

/** The typed arrays in one buffer (8-byte aligned) and where each lies, each stored as {@link codingOf} says. */
function pack(given: [string, Typed][]): { blob: Buffer; layout: Layout } {
  const layout: Layout = [];
  const byName = new Map(given);
  const arrays = given.map(([name, array]): [string, Typed] => [
    name,
    encoded(array, codingOf(name), byName),
  ]);
  let offset = 0;
  for (const [name, array] of arrays) {
    const coding = codingOf(name);
    const entry: Layout[number] = [name, array.constructor.name, offset, array.length];
    if (coding !== undefined) entry.push(coding);
    layout.push(entry);
    offset += Math.ceil(array.byteLength / 8) * 8;
  }
  const blob = Buffer.alloc(offset);
  for (const [index, [, array]] of arrays.entries()) {
    blob.set(
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength),
      (layout[index] as Layout[number])[2],
    );
  }
  return { blob, layout };
}

/** The view as one HTML document. */
export function renderMemoryView(view: MemoryViewDocument): string {
  const { workload } = view;
  const arrays: [string, Typed][] = [
    ["start", workload.start],
    ["end", workload.end],
    ["size", workload.size],
    ["label", workload.label],
    // The labels (stack frames) as UTF-8 JSON: compressed with the rest, they cost little.
    ["labels", new Uint8Array(Buffer.from(JSON.stringify(view.labels ?? []), "utf8"))],
    ["mappedAt", workload.mapped?.at ?? new Uint32Array(0)],
    ["mappedValue", workload.mapped?.value ?? new Float64Array(0)],
    ["stack", workload.stack ?? new Int32Array(0)],
    ["stacks", new Uint8Array(Buffer.from(JSON.stringify(view.stacks ?? []), "utf8"))],
    ["markAt", workload.marks?.at ?? new Uint32Array(0)],
    ["markNames", new Uint8Array(Buffer.from(JSON.stringify(workload.marks?.names ?? []), "utf8"))],
  ];
  workload.policies.forEach((policy, index) => {
    arrays.push([`charged${index}`, policy.charged]);
    arrays.push([`reservedAt${index}`, policy.reservedAt]);
    arrays.push([`reservedValue${index}`, policy.reservedValue]);
  });
  workload.external.forEach((series, index) => {
    arrays.push([`externalAt${index}`, series.at]);
    arrays.push([`externalValue${index}`, series.value]);
  });
  const marks = workload.marks?.at.length ?? 0;
  const { blob, layout } = pack(arrays);
  const data = gzipSync(blob, { level: 6 }).toString("base64");
  const meta = {
    title: view.title,
    events: workload.events,
    policies: workload.policies.map((policy) => policy.name),
    external: workload.external.map((series) => series.name),
    peaks: view.peaks,
    figures: view.figures,
    xLabel:
      view.xLabel ??
      (marks > 0
        ? `mark (${marks} in the trace), at its event; events where fewer than two are in view`
        : "event"),
    mapped: (workload.mapped?.value.length ?? 0) > 0,
    marks,
    layout,
  };
  const { script, style, notice } = uplotFiles();
  const facts = (view.facts ?? [])
    .map(([label, value]) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`)
    .join("");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(view.title)}</title>
<style>${style}</style>
<style>
body { font: 13px system-ui, sans-serif; margin: 16px 20px; color: #111827; }
h1 { font-size: 19px; margin: 0 0 2px; }
p.subtitle { color: #4b5563; margin: 0 0 10px; }
.layout { display: flex; gap: 20px; align-items: flex-start; flex-wrap: wrap; }
.main { flex: 1 1 760px; min-width: 600px; position: relative; }
.side { flex: 0 0 auto; max-width: 520px; }
.controls { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin: 0 0 6px; }
.controls input { width: 90px; }
.legend { display: flex; flex-wrap: wrap; gap: 10px; margin: 6px 0; font-size: 12px; }
.legend span.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin-right: 4px; }
#nuvec-tooltip { position: absolute; pointer-events: none; display: none; background: #111827; color: #f9fafb; padding: 6px 8px; border-radius: 4px; font-size: 12px; max-width: 460px; z-index: 10; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 12px; }
caption { font-weight: 600; text-align: left; padding: 4px 0; }
th { text-align: left; font-weight: 500; padding: 2px 10px 2px 0; }
td { text-align: right; padding: 2px 0 2px 10px; font-variant-numeric: tabular-nums; }
thead th { text-align: right; font-weight: 600; }
p.hint { color: #6b7280; font-size: 12px; margin: 4px 0; }
</style>
</head>
<body>
<h1>${escapeHtml(view.title)}</h1>
${view.subtitle ? `<p class="subtitle">${escapeHtml(view.subtitle)}</p>` : ""}
<div class="layout">
<div class="main">
<div class="controls">
<label>cached band: <select id="nuvec-policy"></select></label>
<label id="nuvec-label-filter" hidden>label: <select id="nuvec-label"></select></label>
<label>events <input id="nuvec-from" type="number" min="0"> to <input id="nuvec-to" type="number" min="1"></label>
<button id="nuvec-zoom" type="button">zoom</button>
<button id="nuvec-reset" type="button">whole trace</button>
<span id="nuvec-status"></span>
</div>
<div id="nuvec-chart"></div>
<div class="legend" id="nuvec-legend"></div>
<p class="hint">Each live allocation is a band as tall as its size, stacked in allocation order and coloured by size class; above them the selected policy's rounding and reuse slack, then its cache, up to its reserved memory. Lines: each policy's reserved memory. Drag across the chart to zoom to those events; double-click or "whole trace" to zoom out. Columns too narrow to show every event draw the state where live bytes peak, and each line's smallest and largest value.</p>
<div id="nuvec-tooltip"></div>
</div>
<div class="side">
<table id="nuvec-figures"></table>
${facts ? `<table class="facts">${facts}</table>` : ""}
</div>
</div>
<!-- uPlot, inlined below:
${notice}-->
<script>${script}</script>
<script type="application/json" id="nuvec-meta">${scriptJson(meta)}</script>
<script type="application/octet-stream" id="nuvec-data">${data}</script>
<script>
(${memoryViewClient.toString()})(
  (${memoryViewCore.toString()})(),
  (${memoryViewDrawing.toString()})(),
  (${memoryViewTicks.toString()})(),
  (${memoryViewData.toString()})(),
  (${memoryViewAxes.toString()})(),
  (${memoryViewHover.toString()})(),
  window.uPlot,
  document,
  window,
);
</script>
</body>
</html>
`;
}
