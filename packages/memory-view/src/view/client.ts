/// <reference lib="dom" />
// The memory view's page code: reads the embedded workload, draws the allocations stacked over time on uPlot's
// canvas (axes, zoom and cursor are uPlot's), the selected policy's slack and cache above them, every
// policy's reserved memory as a line, the peaks, and a tooltip for what is under the pointer; the page's
// controls (policy, label filter, zoom) and the `window.nuvecView` API. Decoding (client-data.ts), the axes
// (client-axes.ts) and the tooltip's text (client-hover.ts) are their own self-contained functions.
// Self-contained (the report inlines this function's source); it gets those, the core, uPlot and the page as
// arguments.
import type { MemoryViewAxes } from "./client-axes.js";
import type { MemoryViewData } from "./client-data.js";
import type { MemoryViewHover } from "./client-hover.js";
import type { Columns, CoreModel, MemoryViewCore } from "./core.js";
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
 * `memoryViewTicks()`, `data` `memoryViewData()`, `axisMaker` `memoryViewAxes()`, `hoverText`
 * `memoryViewHover()`, `uPlot` the inlined library.
 */
export function memoryViewClient(
  core: MemoryViewCore,
  drawing: MemoryViewDrawing,
  tickMaker: MemoryViewTicks,
  data: MemoryViewData,
  axisMaker: MemoryViewAxes,
  hoverText: MemoryViewHover,
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
  const axes = axisMaker.axes(tickMaker, labelWidth, window);
  const { drawnTicks, splitsOf, valuesOf } = axes;
  (window as unknown as { nuvecView: MemoryViewApi }).nuvecView = api;
  const status = byId("nuvec-status");

  function fail(error: unknown): void {
    api.error = String((error as Error)?.stack ?? error);
    status.textContent = `cannot draw: ${String(error)}`;
    throw error;
  }

  function decode() {
    return data.decode((byId("nuvec-data").textContent as string).trim(), meta.layout, (text) =>
      window.atob(text),
    );
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
    const text = hoverText.text(
      {
        core,
        model,
        meta,
        policy: api.selected,
        charged,
        labels,
        labelTexts,
        stacks,
        stackTexts,
        markLine: axes.markLine,
      },
      rep,
      found?.index,
    );
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
  let charged: Float64Array[] = [];

  async function start(): Promise<void> {
    const started = window.performance.now();
    figuresTable();
    const arrays = await decode();
    const decoded = window.performance.now();
    const read = data.read(meta, arrays);
    const input = read.input;
    labels = read.labels;
    axes.setMarks(read.markAt, read.markNames);
    labelTexts = read.labelTexts;
    stacks = read.stacks;
    stackTexts = read.stackTexts;
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
