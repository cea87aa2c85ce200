// What the memory view draws on uPlot's canvas: the stacked allocations with the selected policy's slack and
// cache above them, the reported peaks, and the chart's line data per column. Self-contained like the core
// (the report inlines `memoryViewDrawing`'s source): everything it needs comes in as arguments.
import type { Columns, CoreModel } from "./core.js";

/**
 * The parts of a canvas's 2D context that drawing uses (a `CanvasRenderingContext2D` has them all; declared
 * here so that the package's types need no DOM library).
 */
export interface DrawContext {
  fillStyle: unknown;
  strokeStyle: unknown;
  font: string;
  textAlign: string;
  textBaseline: string;
  lineWidth: number;
  save(): void;
  restore(): void;
  beginPath(): void;
  rect(x: number, y: number, width: number, height: number): void;
  clip(): void;
  fillRect(x: number, y: number, width: number, height: number): void;
  fillText(text: string, x: number, y: number): void;
  setLineDash(segments: number[]): void;
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
  stroke(): void;
}

/** The parts of a uPlot chart that drawing uses. */
export interface DrawTarget {
  ctx: DrawContext;
  bbox: { left: number; top: number; width: number; height: number };
  valToPos(value: number, scale: string, canvasPixels?: boolean): number;
}

/** What {@link MemoryViewDrawing.drawBands} draws, and where it records each allocation's columns. */
export interface BandsView {
  model: CoreModel;
  cols: Columns;
  /** The selected policy's index. */
  policy: number;
  /** The x of column `c`'s left edge and its width, in canvas pixels. */
  columnSpan(column: number): [number, number];
  sizeClass(bytes: number): number;
  /** The first and last columns where each allocation was drawn as a band of its own (-1: not drawn). */
  placed: { first: Int32Array; last: Int32Array };
  /** Per allocation: 1 where a label filter leaves it out (drawn grey); absent: none is. */
  dimmed?: Uint8Array;
}

/** What {@link MemoryViewDrawing.drawPeaks} marks. */
export interface PeaksView {
  peaks: { active: number; reserved: number };
  /** The selected policy's name and index. */
  name: string;
  policy: number;
  formatBytes(bytes: number): string;
  pixelRatio: number;
}

/** The view's drawing; `memoryViewDrawing()` returns it (the page calls it from its inlined source). */
export interface MemoryViewDrawing {
  drawBands(u: DrawTarget, view: BandsView): void;
  drawPeaks(u: DrawTarget, view: PeaksView): void;
  chartData(cols: Columns): ArrayLike<number>[];
  COLORS: string[];
  POLICY_COLORS: string[];
  EXTERNAL_COLORS: string[];
  SLACK: string;
  CACHE: string;
  MAPPED: string;
}

/** The drawing functions and colours of the memory view. */
export function memoryViewDrawing(): MemoryViewDrawing {
  // Two shades per size class, alternating between neighbouring allocations so each band stands apart.
  // The seventh: allocations a label filter leaves out.
  const COLORS = ["#93c5fd", "#3b82f6", "#34d399", "#a78bfa", "#f472b6", "#94a3b8", "#e5e7eb"];
  const SHADES = ["#bfdbfe", "#2563eb", "#10b981", "#8b5cf6", "#ec4899", "#64748b", "#f3f4f6"];
  const POLICY_COLORS = ["#1d4ed8", "#b45309", "#047857", "#7c3aed", "#be123c", "#0f766e"];
  const EXTERNAL_COLORS = ["#111827", "#6b7280"];
  // Opaque: neighbouring columns may share a pixel, and a translucent fill drawn twice would show stripes.
  const SLACK = "#d1d5db";
  const CACHE = "#fcdcaa";
  // Mapped files (checkpoints mapped without a copy): outside the allocator's reserved memory, beside it in
  // the memory limit, so their band sits above it.
  const MAPPED = "#99f6e4";

  /** Draws the stacked allocations and the selected policy's slack and cache bands. */
  function drawBands(u: DrawTarget, view: BandsView): void {
    const { model, cols, columnSpan, placed, dimmed } = view;
    const sizeClass = (index: number) =>
      dimmed?.[index] === 1 ? 6 : view.sizeClass(model.size[index] as number);
    const context = u.ctx;
    const { left, top, width, height } = u.bbox;
    context.save();
    context.beginPath();
    context.rect(left, top, width, height);
    context.clip();
    const bottom = u.valToPos(0, "y", true);
    const yOf = (bytes: number) => u.valToPos(bytes, "y", true);
    const n = model.start.length;
    if (placed.first.length !== n) {
      placed.first = new Int32Array(n);
      placed.last = new Int32Array(n);
    }
    const firstColumn = placed.first;
    const lastColumn = placed.last;
    firstColumn.fill(-1);
    // Rectangles extend across columns while an allocation keeps its place: far fewer fill calls.
    const openX = new Float64Array(n).fill(Number.NaN);
    const openTop = new Float64Array(n);
    const openBottom = new Float64Array(n);
    const openEnd = new Float64Array(n);
    const openColor = new Int8Array(n);
    const flush = (index: number) => {
      const x = openX[index] as number;
      if (Number.isNaN(x)) return;
      const color = openColor[index] as number;
      context.fillStyle = (color >= 0 ? COLORS : SHADES)[Math.abs(color) - 1] as string;
      context.fillRect(
        x,
        openTop[index] as number,
        (openEnd[index] as number) - x,
        (openBottom[index] as number) - (openTop[index] as number),
      );
      openX[index] = Number.NaN;
    };
    const place = (index: number, x: number, w: number, y0: number, y1: number, color: number) => {
      if (!Number.isNaN(openX[index] as number)) {
        if (
          openTop[index] === y0 &&
          openBottom[index] === y1 &&
          openColor[index] === color &&
          Math.abs((openEnd[index] as number) - x) < 0.01
        ) {
          openEnd[index] = x + w;
          return;
        }
        flush(index);
      }
      openX[index] = x;
      openTop[index] = y0;
      openBottom[index] = y1;
      openEnd[index] = x + w;
      openColor[index] = color;
    };
    let live: number[] = [];
    let next = 0;
    const touched = new Uint8Array(n);
    const policy = view.policy;
    for (let column = 0; column < cols.count; column += 1) {
      const rep = cols.rep[column] as number;
      while (next < n && (model.start[next] as number) <= rep) {
        live.push(next);
        next += 1;
      }
      const kept: number[] = [];
      const [x, w] = columnSpan(column);
      let offset = 0;
      let pixel = bottom;
      let runFirst = -1;
      // Sub-pixel allocations pile into one run until it is a pixel tall; its first one names it.
      const closeRun = (y: number) => {
        place(runFirst, x, w, Math.round(y), Math.round(pixel), sizeClass(runFirst) + 1);
        touched[runFirst] = 1;
        pixel = y;
        runFirst = -1;
      };
      for (const index of live) {
        if ((model.end[index] as number) <= rep) {
          flush(index);
          continue;
        }
        kept.push(index);
        const size = model.size[index] as number;
        const lower = yOf(offset);
        offset += size;
        const upper = yOf(offset);
        if (lower - upper >= 1) {
          if (runFirst >= 0) closeRun(lower);
          const color = (index % 2 === 0 ? 1 : -1) * (sizeClass(index) + 1);
          place(index, x, w, Math.round(upper), Math.round(pixel), color);
          touched[index] = 1;
          if (firstColumn[index] === -1) firstColumn[index] = column;
          lastColumn[index] = column;
          pixel = upper;
          continue;
        }
        if (runFirst < 0) runFirst = index;
        else flush(index);
        if (pixel - upper >= 1) closeRun(upper);
      }
      if (runFirst >= 0) closeRun(yOf(offset));
      live = kept;
      // Above the allocations: the selected policy's slack (active beyond the requested sizes), then cache.
      const active = (model.policies[policy] as { active: Float64Array }).active[rep] as number;
      const reserved = (model.policies[policy] as { reserved: Float64Array }).reserved[rep] as number;
      if (active > offset) {
        context.fillStyle = SLACK;
        context.fillRect(x, yOf(active), w, yOf(offset) - yOf(active));
      }
      if (reserved > Math.max(active, offset)) {
        context.fillStyle = CACHE;
        const from = Math.max(active, offset);
        context.fillRect(x, yOf(reserved), w, yOf(from) - yOf(reserved));
      }
      const mapped = model.mapped[rep] as number;
      if (mapped > 0) {
        const base = Math.max(reserved, active, offset);
        context.fillStyle = MAPPED;
        context.fillRect(x, yOf(base + mapped), w, yOf(base) - yOf(base + mapped));
      }
    }
    for (let index = 0; index < n; index += 1) if (touched[index]) flush(index);
    context.restore();
  }

  /** Dashed lines at the selected policy's reported peaks, labelled. */
  function drawPeaks(u: DrawTarget, view: PeaksView): void {
    const context = u.ctx;
    const { left, top, width } = u.bbox;
    const { peaks, name, policy, formatBytes, pixelRatio } = view;
    const marks: [number, string, string][] = [
      [
        peaks.reserved,
        `peak reserved (${name}) ${formatBytes(peaks.reserved)}`,
        POLICY_COLORS[policy % POLICY_COLORS.length] as string,
      ],
      [peaks.active, `peak active (${name}) ${formatBytes(peaks.active)}`, "#1f2937"],
    ];
    context.save();
    context.font = `${12 * pixelRatio}px system-ui, sans-serif`;
    context.textAlign = "left";
    context.textBaseline = "alphabetic";
    marks.forEach(([value, label, color], index) => {
      const y = Math.round(u.valToPos(value, "y", true));
      if (y < top) return;
      context.strokeStyle = color;
      context.fillStyle = color;
      context.setLineDash([6 * pixelRatio, 4 * pixelRatio]);
      context.lineWidth = pixelRatio;
      context.beginPath();
      context.moveTo(left, y + 0.5);
      context.lineTo(left + width, y + 0.5);
      context.stroke();
      context.fillText(label, left + 6 + index * 320 * pixelRatio, y - 4 * pixelRatio);
    });
    context.restore();
  }

  /** The chart's data at the current zoom: four points per column (first, min/max in order, last). */
  function chartData(cols: Columns): ArrayLike<number>[] {
    const points = cols.count * 4;
    const xs = new Float64Array(points);
    for (let column = 0; column < cols.count; column += 1) {
      const from = cols.bounds[column] as number;
      const width = (cols.bounds[column + 1] as number) - from;
      xs[column * 4] = from;
      xs[column * 4 + 1] = from + width / 4;
      xs[column * 4 + 2] = from + width / 2;
      xs[column * 4 + 3] = from + (width * 3) / 4;
    }
    const lines = [...cols.reserved, ...cols.external].map((series) => {
      const ys = new Float64Array(points);
      for (let column = 0; column < cols.count; column += 1) {
        const low = series.min[column] as number;
        const high = series.max[column] as number;
        ys[column * 4] = series.first[column] as number;
        ys[column * 4 + 1] = series.minFirst[column] ? low : high;
        ys[column * 4 + 2] = series.minFirst[column] ? high : low;
        ys[column * 4 + 3] = series.last[column] as number;
      }
      return ys;
    });
    return [xs, ...lines];
  }

  return { drawBands, drawPeaks, chartData, COLORS, POLICY_COLORS, EXTERNAL_COLORS, SLACK, CACHE, MAPPED };
}
