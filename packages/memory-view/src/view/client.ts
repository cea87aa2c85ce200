/// <reference lib="dom" />
// The memory view's page code: reads the embedded workload, draws the allocations stacked over time on uPlot's
// canvas (axes, zoom and cursor are uPlot's), the selected policy's slack and cache above them, every
// policy's reserved memory as a line, the peaks, and a tooltip for what is under the pointer. Self-contained
// (the report inlines this function's source); it gets the core, uPlot and the page as arguments.
import type { Columns, CoreInput, CoreModel, MemoryViewCore } from "./core.js";
import type { MemoryViewDrawing } from "./drawing.js";
import type { MemoryViewTicks, Tick } from "./ticks.js";

/** The parts of uPlot the view uses. */
interface UPlotChart {
  ctx: CanvasRenderingContext2D;
  bbox: { left: number; top: number; width: number; height: number };
  over: HTMLElement;
  root: HTMLElement;
  cursor: { left?: number; top?: number; idx?: number | null };
  select: { left: number; width: number };
  valToPos(value: number, scale: string, canvasPixels?: boolean): number;
  posToVal(position: number, scale: string): number;
  setData(data: ArrayLike<number>[], resetScales?: boolean): void;
  setScale(scale: string, limits: { min: number; max: number }): void;
  setSelect(select: { left: number; top: number; width: number; height: number }, fire?: boolean): void;
  setSize(size: { width: number; height: number }): void;
  redraw(rebuildPaths?: boolean, recalcAxes?: boolean): void;
}
interface UPlotStatic {
  new (options: object, data: ArrayLike<number>[], target: HTMLElement): UPlotChart;
  paths: { stepped?: (options: { align: number }) => unknown };
}

/** What the page exposes for tests and curious users, as `window.nuvecView`. */
export interface MemoryViewApi {
  ready: boolean;
  error?: string;
  /** Milliseconds from navigation start to the end of the first draw. */
  firstDrawMs?: number;
  /** Milliseconds from navigation start to: the script's start, the data decoded, the model built. */
  timings?: { started: number; decoded: number; built: number };
  model?: CoreModel;
  columns?: Columns;
  selected: number;
  /** The highest reserved (or, with `"active"`, active) value drawn for policy `index` at the current zoom. */
  drawnPeak(index: number, which?: "reserved" | "active"): number;
  /** The peaks the report states for policy `index`. */
  reportedPeak(index: number): { active: number; reserved: number };
  /** Page coordinates of the middle of allocation `index`'s band, where it is drawn; undefined if hidden. */
  locate(index: number): { x: number; y: number } | undefined;
  /** Page coordinates of a value on the chart. */
  pagePoint(event: number, bytes: number): { x: number; y: number };
  /** The ticks each axis drew last (x, then y), with their labels' widths in CSS pixels. */
  axisTicks(): { x: (Tick & { width: number })[]; y: (Tick & { width: number })[] };
  setRange(from: number, to: number): void;
  select(policy: number): void;
}

/**
 * Runs the page: `core` is `memoryViewCore()`, `drawing` `memoryViewDrawing()`, `tickMaker`
 * `memoryViewTicks()`, `uPlot` the inlined library.
 */
export function memoryViewClient(
  core: MemoryViewCore,
  drawing: MemoryViewDrawing,
  tickMaker: MemoryViewTicks,
  uPlot: UPlotStatic,
  document: Document,
  window: Window,
): void {
  const { COLORS, POLICY_COLORS, EXTERNAL_COLORS, SLACK, CACHE, MAPPED, chartData } = drawing;
  const byId = (id: string) => document.getElementById(id) as HTMLElement;
  const meta = JSON.parse(byId("nuvec-meta").textContent as string) as {
    title: string;
    events: number;
    policies: string[];
    external: string[];
    peaks: { active: number; reserved: number }[];
    figures: { columns: string[]; rows: { label: string; values: (number | string)[]; bytes?: boolean }[] };
    xLabel: string;
    mapped: boolean;
    marks: number;
    layout: [string, string, number, number, string?][];
  };
  const api: MemoryViewApi = {
    ready: false,
    selected: 0,
    drawnPeak,
    reportedPeak: (index) => meta.peaks[index] as { active: number; reserved: number },
    locate,
    pagePoint,
    axisTicks: () => ({ x: drawnTicks.x, y: drawnTicks.y }),
    setRange,
    select,
  };
  const AXIS_FONT = "12px system-ui, sans-serif";
  const measurer = document.createElement("canvas").getContext("2d") as CanvasRenderingContext2D;
  measurer.font = AXIS_FONT;
  const labelWidth = (label: string) => measurer.measureText(label).width;
  const drawnTicks: { x: (Tick & { width: number })[]; y: (Tick & { width: number })[] } = { x: [], y: [] };
  let markAt: Uint32Array = new Uint32Array(0);
  let markNames: string[] = [];
  /** The index of the last mark at or before `event` (-1: none). */
  function markBefore(event: number): number {
    let low = 0;
    let high = markAt.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((markAt[middle] as number) <= event) low = middle + 1;
      else high = middle;
    }
    return low - 1;
  }
  /** The x axis's ticks: round numbers of marks at their events when the trace has marks, else of events. */
  function xTicks(u: UPlotChart, min: number, max: number): Tick[] {
    const length = u.bbox.width / window.devicePixelRatio;
    if (markAt.length === 0)
      return tickMaker.ticks(min, max, { kind: "count", length, extent: labelWidth, gap: 12 });
    const first = markBefore(min - 1) + 1;
    const last = markBefore(max);
    // Zoomed in between marks (fewer than two in view): the events themselves.
    if (last <= first)
      return tickMaker.ticks(min, max, { kind: "count", length, extent: labelWidth, gap: 12 });
    const span = Math.max(1, max - min);
    const found = tickMaker.ticks(first, last === first ? first + 1 : last, {
      kind: "count",
      length,
      extent: labelWidth,
      gap: 12,
      position: (mark) => (((markAt[Math.min(mark, last)] as number) - min) / span) * length,
      label: (mark) => markNames[mark] ?? String(mark),
    });
    return found
      .filter((tick) => tick.value <= last)
      .map((tick) => ({ value: markAt[tick.value] as number, label: tick.label }));
  }
  function yTicks(u: UPlotChart, min: number, max: number): Tick[] {
    // Vertical: a label takes its line's height.
    return tickMaker.ticks(min, max, {
      kind: "bytes",
      length: u.bbox.height / window.devicePixelRatio,
      extent: () => 14,
      gap: 10,
    });
  }
  // The labels of the ticks each axis's splits chose, for its values (uPlot asks for them next).
  const tickLabels = { x: new Map<number, string>(), y: new Map<number, string>() };
  function splitsOf(which: "x" | "y") {
    return (u: UPlotChart, _axis: number, min: number, max: number) => {
      const found = which === "x" ? xTicks(u, min, max) : yTicks(u, min, max);
      drawnTicks[which] = found.map((tick) => ({ ...tick, width: labelWidth(tick.label) }));
      tickLabels[which] = new Map(found.map((tick) => [tick.value, tick.label]));
      return found.map((tick) => tick.value);
    };
  }
  function valuesOf(which: "x" | "y") {
    return (_u: UPlotChart, splits: number[]) => splits.map((value) => tickLabels[which].get(value) ?? "");
  }
  /** The hover's line about the marks: the last one at or before `event`. */
  function markLine(event: number): string[] {
    if (markAt.length === 0) return [];
    const mark = markBefore(event);
    return [mark < 0 ? "before the first mark" : `after mark ${mark}: ${markNames[mark] ?? ""}`];
  }
  (window as unknown as { nuvecView: MemoryViewApi }).nuvecView = api;
  const status = byId("nuvec-status");

  function fail(error: unknown): void {
    api.error = String((error as Error)?.stack ?? error);
    status.textContent = `cannot draw: ${String(error)}`;
    throw error;
  }

  async function decode(): Promise<Record<string, Float64Array | Uint32Array | Int32Array | Uint8Array>> {
    const text = (byId("nuvec-data").textContent as string).trim();
    // The native decoder where the browser has it (several times faster on megabytes), else atob.
    const fromBase64 = (Uint8Array as unknown as { fromBase64?: (text: string) => Uint8Array }).fromBase64;
    let bytes: Uint8Array;
    if (fromBase64 !== undefined) bytes = fromBase64(text);
    else {
      const binary = window.atob(text);
      bytes = new Uint8Array(binary.length);
      for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
    }
    const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip"));
    const buffer = await new Response(stream).arrayBuffer();
    const arrays: Record<string, Float64Array | Uint32Array | Int32Array | Uint8Array> = {};
    for (const [name, type, offset, length, coding] of meta.layout) {
      if (type === "Float64Array") arrays[name] = new Float64Array(buffer, offset, length);
      else if (type === "Int32Array") arrays[name] = new Int32Array(buffer, offset, length);
      else if (type === "Uint8Array") arrays[name] = new Uint8Array(buffer, offset, length);
      else arrays[name] = new Uint32Array(buffer, offset, length);
      // Event indices stored as differences (render.ts's codingOf): summed back in place.
      const values = arrays[name] as Uint32Array;
      if (coding === "delta")
        for (let index = 1; index < length; index += 1)
          values[index] = (values[index] as number) + (values[index - 1] as number);
      else if (coding !== undefined) {
        const base = arrays[coding.slice("after:".length)] as Uint32Array;
        for (let index = 0; index < length; index += 1)
          values[index] = (values[index] as number) + (base[index] as number);
      }
    }
    return arrays;
  }

  function figuresTable(): void {
    const table = byId("nuvec-figures");
    const head = `<caption>figures</caption><thead><tr><th></th>${meta.figures.columns.map((column) => `<th>${escapeText(column)}</th>`).join("")}</tr></thead>`;
    const rows = meta.figures.rows
      .map(
        (row) =>
          `<tr><th>${escapeText(row.label)}</th>${row.values
            .map(
              (value) =>
                `<td${typeof value === "number" ? ` data-bytes="${value}"` : ""}>${escapeText(
                  typeof value === "number" && row.bytes ? core.formatBytes(value) : String(value),
                )}</td>`,
            )
            .join("")}</tr>`,
      )
      .join("");
    table.innerHTML = `${head}<tbody>${rows}</tbody>`;
  }

  function escapeText(text: string): string {
    return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
  }

  let model: CoreModel;
  let chart: UPlotChart;
  let cols: Columns;
  let yMax = 1;
  const range = { from: 0, to: meta.events };

  function drawnPeak(index: number, which: "reserved" | "active" = "reserved"): number {
    if (!api.ready) return 0;
    const series = (which === "reserved" ? cols.reserved : cols.active)[index];
    let peak = 0;
    if (series !== undefined) for (const value of series.max) peak = Math.max(peak, value);
    return peak;
  }

  function computeColumns(): void {
    computeColumnsFor(Math.max(50, Math.round(chart.bbox.width / window.devicePixelRatio)));
  }

  function setRange(from: number, to: number): void {
    range.from = Math.max(0, Math.min(meta.events - 1, Math.floor(from)));
    range.to = Math.max(range.from + 1, Math.min(meta.events, Math.ceil(to)));
    (byId("nuvec-from") as HTMLInputElement).value = String(range.from);
    (byId("nuvec-to") as HTMLInputElement).value = String(range.to);
    computeColumns();
    chart.setData(chartData(cols), false);
    chart.setScale("x", { min: range.from, max: range.to });
    chart.setScale("y", { min: 0, max: yMax });
  }

  /** The filter by label, where allocations have labels: the chosen label's bands keep their colours. */
  function labelFilter(): void {
    const summary = core.labelSummary(labels, model.size, labelTexts.length);
    if (summary.length === 0) return;
    const chooser = byId("nuvec-label") as HTMLSelectElement;
    chooser.innerHTML = [
      `<option value="-1">all (${summary.length} labels)</option>`,
      ...summary.map(
        (row) =>
          `<option value="${row.label}">${escapeText(core.shortLabel(labelTexts[row.label] ?? ""))} · ${row.count} allocation${row.count === 1 ? "" : "s"}, ${core.formatBytes(row.bytes)} allocated</option>`,
      ),
    ].join("");
    chooser.addEventListener("change", () => {
      const chosen = Number(chooser.value);
      dimmed = chosen < 0 ? undefined : core.dimmedExcept(labels, chosen);
      chart.redraw(false, false);
    });
    (byId("nuvec-label-filter") as HTMLElement).hidden = false;
  }

  function select(policy: number): void {
    api.selected = policy;
    (byId("nuvec-policy") as HTMLSelectElement).value = String(policy);
    chart.redraw(false, false);
  }

  /** The x of column `c`'s left edge and its width, in canvas pixels. */
  function columnSpan(column: number): [number, number] {
    // Whole pixels: translucent bands that overlap by a fraction of a pixel would show stripes.
    const left = Math.round(chart.valToPos(cols.bounds[column] as number, "x", true));
    const right = Math.round(chart.valToPos(cols.bounds[column + 1] as number, "x", true));
    return [left, Math.max(1, right - left)];
  }

  // The first and last columns where each allocation was drawn as a band of its own, for `locate`.
  const placed = { first: new Int32Array(0), last: new Int32Array(0) };

  function drawBands(u: UPlotChart): void {
    const view = { model, cols, policy: api.selected, columnSpan, sizeClass: core.sizeClass, placed, dimmed };
    drawing.drawBands(u, view);
  }

  function drawPeaks(u: UPlotChart): void {
    drawing.drawPeaks(u, {
      peaks: meta.peaks[api.selected] as { active: number; reserved: number },
      name: meta.policies[api.selected] as string,
      policy: api.selected,
      formatBytes: core.formatBytes,
      pixelRatio: window.devicePixelRatio,
    });
  }

  function pagePoint(event: number, bytes: number): { x: number; y: number } {
    const box = chart.over.getBoundingClientRect();
    return {
      x: box.left + window.scrollX + chart.valToPos(event, "x"),
      y: box.top + window.scrollY + chart.valToPos(bytes, "y"),
    };
  }

  function locate(index: number): { x: number; y: number } | undefined {
    const first = placed.first[index];
    if (first === undefined || first < 0) return undefined;
    // The middle of where its band was drawn (an allocation lives over one run of events, so it is live at
    // every column in between), at its place in that column's stack.
    const column = Math.floor((first + (placed.last[index] as number)) / 2);
    const rep = cols.rep[column] as number;
    let offset = 0;
    for (const other of core.liveAt(model, rep)) {
      if (other === index) break;
      offset += model.size[other] as number;
    }
    const box = chart.over.getBoundingClientRect();
    const [x, w] = columnSpan(column);
    const ratio = window.devicePixelRatio;
    return {
      x: box.left + window.scrollX + (x + w / 2 - chart.bbox.left) / ratio,
      y: box.top + window.scrollY + chart.valToPos(offset + (model.size[index] as number) / 2, "y"),
    };
  }

  /** The column drawn under `left` (CSS pixels from the plot's left edge), by the pixels drawing used. */
  function columnAt(left: number): number {
    const x = chart.bbox.left + left * window.devicePixelRatio;
    let low = 0;
    let high = cols.count - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (columnSpan(middle)[0] <= x) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  const tooltip = byId("nuvec-tooltip");
  function hover(u: UPlotChart): void {
    const left = u.cursor.left ?? -1;
    const topPx = u.cursor.top ?? -1;
    if (left < 0 || topPx < 0) {
      tooltip.style.display = "none";
      return;
    }
    const column = columnAt(left);
    const rep = cols.rep[column] as number;
    const bytes = u.posToVal(topPx, "y");
    const found = core.hit(model, rep, bytes);
    let text: string;
    if (found !== undefined) {
      const index = found.index;
      const start = model.start[index] as number;
      const end = model.end[index] as number;
      const size = model.size[index] as number;
      const label = labels[index] as number;
      text = [
        `allocation ${index} · ${core.formatBytes(size)} (${size} B) · ${core.SIZE_CLASSES[core.sizeClass(size)]?.label}`,
        `allocated at event ${start}, ${end >= meta.events ? "never freed" : `freed at event ${end}`}`,
        `age ${rep - start} events here; lives ${end - start} events`,
        ...markLine(start).map((line) => `allocated ${line}`),
        ...meta.policies.map(
          (name, policy) => `${name}: charged ${core.formatBytes(charged[policy]?.[index] ?? 0)}`,
        ),
        ...(label >= 0 ? [labelTexts[label] ?? ""] : []),
        ...stackLines(stackTexts[stacks[index] ?? -1] ?? []),
      ].join("\n");
    } else {
      const policy = model.policies[api.selected] as {
        name: string;
        active: Float64Array;
        reserved: Float64Array;
      };
      const live = model.live[rep] as number;
      const active = policy.active[rep] as number;
      const reserved = policy.reserved[rep] as number;
      text = [
        `event ${rep}`,
        ...markLine(rep),
        `live ${core.formatBytes(live)} · ${policy.name}: active ${core.formatBytes(active)}, cache ${core.formatBytes(reserved - active)}, reserved ${core.formatBytes(reserved)}`,
        ...meta.external.map(
          (name, index) => `${name}: ${core.formatBytes(model.external[index]?.values[rep] ?? 0)}`,
        ),
        ...(meta.mapped ? [`mapped files ${core.formatBytes(model.mapped[rep] as number)}`] : []),
      ].join("\n");
    }
    tooltip.textContent = text;
    tooltip.dataset.allocation = found === undefined ? "" : String(found.index);
    tooltip.style.display = "block";
    const overBox = u.over.getBoundingClientRect();
    const mainBox = (tooltip.parentElement as HTMLElement).getBoundingClientRect();
    tooltip.style.left = `${overBox.left - mainBox.left + left + 14}px`;
    tooltip.style.top = `${overBox.top - mainBox.top + topPx + 14}px`;
  }

  let labels: Int32Array = new Int32Array(0);
  let labelTexts: string[] = [];
  let stacks: Int32Array = new Int32Array(0);
  let stackTexts: string[][] = [];
  let dimmed: Uint8Array | undefined;
  /** A stack's frames for the hover: the innermost 16, each cut to 160 characters, then how many more. */
  const stackLines = (frames: string[]) => [
    ...frames.slice(0, 16).map((frame) => `  ${frame.length > 160 ? `${frame.slice(0, 159)}…` : frame}`),
    ...(frames.length > 16 ? [`  … ${frames.length - 16} more frames`] : []),
  ];
  let charged: Float64Array[] = [];

  async function start(): Promise<void> {
    const started = window.performance.now();
    figuresTable();
    const arrays = await decode();
    const decoded = window.performance.now();
    const input: CoreInput = {
      events: meta.events,
      start: arrays.start as Uint32Array,
      end: arrays.end as Uint32Array,
      size: arrays.size as Float64Array,
      policies: meta.policies.map((name, index) => ({
        name,
        charged: arrays[`charged${index}`] as Float64Array,
        reservedAt: arrays[`reservedAt${index}`] as Uint32Array,
        reservedValue: arrays[`reservedValue${index}`] as Float64Array,
      })),
      external: meta.external.map((name, index) => ({
        name,
        at: arrays[`externalAt${index}`] as Uint32Array,
        value: arrays[`externalValue${index}`] as Float64Array,
      })),
      mapped: { at: arrays.mappedAt as Uint32Array, value: arrays.mappedValue as Float64Array },
    };
    labels = arrays.label as Int32Array;
    markAt = (arrays.markAt as Uint32Array | undefined) ?? new Uint32Array(0);
    markNames = JSON.parse(new TextDecoder().decode(arrays.markNames as Uint8Array)) as string[];
    labelTexts = JSON.parse(new TextDecoder().decode(arrays.labels as Uint8Array)) as string[];
    stacks = (arrays.stack as Int32Array | undefined) ?? new Int32Array(0);
    if (arrays.stacks !== undefined)
      stackTexts = JSON.parse(new TextDecoder().decode(arrays.stacks as Uint8Array)) as string[][];
    charged = input.policies.map((policy) => policy.charged);
    model = core.build(input);
    api.model = model;
    api.timings = { started, decoded, built: window.performance.now() };

    const picker = byId("nuvec-policy") as HTMLSelectElement;
    picker.innerHTML = meta.policies
      .map((name, index) => `<option value="${index}">${escapeText(name)}</option>`)
      .join("");
    picker.addEventListener("change", () => select(Number(picker.value)));
    labelFilter();
    const legend = byId("nuvec-legend");
    legend.innerHTML = [
      ...core.SIZE_CLASSES.map(
        (sizeClass, index) =>
          `<span><span class="swatch" style="background:${COLORS[index]}"></span>${escapeText(sizeClass.label)}</span>`,
      ),
      `<span><span class="swatch" style="background:${SLACK}"></span>rounding and reuse slack</span>`,
      `<span><span class="swatch" style="background:${CACHE}"></span>cache</span>`,
      ...(meta.mapped
        ? [`<span><span class="swatch" style="background:${MAPPED}"></span>mapped files</span>`]
        : []),
    ].join("");

    const main = byId("nuvec-chart");
    const width = Math.max(600, Math.min(1200, (main.parentElement as HTMLElement).clientWidth || 900));
    // Two columns until uPlot has laid the plot out: then one per pixel of its real width (one full draw).
    computeColumnsFor(2);
    const stepped = uPlot.paths.stepped?.({ align: 1 });
    const series = [
      { label: meta.xLabel },
      ...meta.policies.map((name, index) => ({
        label: `${name} reserved`,
        stroke: POLICY_COLORS[index % POLICY_COLORS.length],
        width: 1.5,
        ...(stepped ? { paths: stepped } : {}),
      })),
      ...meta.external.map((name, index) => ({
        label: name,
        stroke: EXTERNAL_COLORS[index % EXTERNAL_COLORS.length],
        width: 1.5,
        dash: [4, 3],
        ...(stepped ? { paths: stepped } : {}),
      })),
    ];
    const options = {
      width,
      height: 460,
      // Fixed: uPlot's automatic padding follows the axis labels, and the plot's width (its columns) with it.
      padding: [16, 24, 0, 0],
      series,
      scales: { x: { time: false, auto: false }, y: { auto: false, range: () => [0, yMax] } },
      axes: [
        { label: meta.xLabel, font: AXIS_FONT, splits: splitsOf("x"), values: valuesOf("x") },
        { size: 90, font: AXIS_FONT, splits: splitsOf("y"), values: valuesOf("y") },
      ],
      legend: { show: true, live: false },
      cursor: {
        drag: { x: true, y: false, setScale: false },
        points: { show: false },
        bind: {
          dblclick: () => () => {
            setRange(0, meta.events);
            return null;
          },
        },
      },
      hooks: {
        drawClear: [(u: UPlotChart) => drawBands(u)],
        draw: [(u: UPlotChart) => drawPeaks(u)],
        setCursor: [(u: UPlotChart) => hover(u)],
        setSelect: [
          (u: UPlotChart) => {
            if (u.select.width < 3) return;
            const from = u.posToVal(u.select.left, "x");
            const to = u.posToVal(u.select.left + u.select.width, "x");
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            setRange(from, to);
          },
        ],
      },
    };
    chart = new uPlot(options, chartData(cols), main);
    setRange(0, meta.events);
    chart.over.addEventListener("mouseleave", () => {
      tooltip.style.display = "none";
    });
    byId("nuvec-zoom").addEventListener("click", () =>
      setRange(
        Number((byId("nuvec-from") as HTMLInputElement).value),
        Number((byId("nuvec-to") as HTMLInputElement).value),
      ),
    );
    byId("nuvec-reset").addEventListener("click", () => setRange(0, meta.events));
    (byId("nuvec-from") as HTMLInputElement).value = "0";
    (byId("nuvec-to") as HTMLInputElement).value = String(meta.events);
    api.firstDrawMs = window.performance.now();
    api.ready = true;
    document.body.dataset.ready = "true";
  }

  function computeColumnsFor(pixels: number): void {
    cols = core.columns(model, range.from, range.to, pixels);
    api.columns = cols;
    yMax = 1;
    for (const group of [cols.reserved, cols.active, cols.external, [cols.live]]) {
      for (const series of group) for (const value of series.max) yMax = Math.max(yMax, value);
    }
    // Mapped files are drawn above everything else of a column: room for the highest such pile.
    let highestMapped = 0;
    for (const value of cols.mapped.max) highestMapped = Math.max(highestMapped, value);
    yMax += highestMapped;
    yMax *= 1.06;
  }

  start().catch(fail);
}
