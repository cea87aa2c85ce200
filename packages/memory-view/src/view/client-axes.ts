/// <reference lib="dom" />
// The memory view's axes: which ticks each axis draws and their labels (round numbers of bytes up the side;
// along the bottom, round numbers of the trace's marks at their events, or of events where it has none), and
// the hover's line about the marks. Self-contained like the core (the report inlines `memoryViewAxes`'s
// source): everything it needs comes in as arguments.
import type { MemoryViewTicks, Tick } from "./ticks.js";

/** The parts of a uPlot chart the axes read. */
export interface AxesChart {
  bbox: { width: number; height: number };
}

/** A tick with its label's width in CSS pixels. */
export type DrawnTick = Tick & { width: number };

/** One page's axes, as {@link MemoryViewAxes.axes} makes them. */
export interface Axes {
  /** The trace's marks: their events (ascending) and names. */
  setMarks(at: Uint32Array, names: string[]): void;
  /** uPlot's `splits` for axis `which`: the chosen ticks' values (recording the ticks and their labels). */
  splitsOf(which: "x" | "y"): (u: AxesChart, axis: number, min: number, max: number) => number[];
  /** uPlot's `values` for axis `which`: the labels of the ticks its splits chose. */
  valuesOf(which: "x" | "y"): (u: AxesChart, splits: number[]) => string[];
  /** The hover's line about the marks: the last one at or before `event` (none when the trace has no marks). */
  markLine(event: number): string[];
  /** The ticks each axis drew last. */
  drawnTicks: { x: DrawnTick[]; y: DrawnTick[] };
}

/** The axes' maker, as {@link memoryViewAxes} returns it. */
export interface MemoryViewAxes {
  /**
   * The axes of one page: `tickMaker` is `memoryViewTicks()`, `labelWidth` measures a label in CSS pixels,
   * `screen.devicePixelRatio` is read at every layout.
   */
  axes(
    tickMaker: MemoryViewTicks,
    labelWidth: (label: string) => number,
    screen: { devicePixelRatio: number },
  ): Axes;
}

/** The memory view's axes. */
export function memoryViewAxes(): MemoryViewAxes {
  function axes(
    tickMaker: MemoryViewTicks,
    labelWidth: (label: string) => number,
    screen: { devicePixelRatio: number },
  ): Axes {
    const drawnTicks: { x: DrawnTick[]; y: DrawnTick[] } = { x: [], y: [] };
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
    function xTicks(u: AxesChart, min: number, max: number): Tick[] {
      const length = u.bbox.width / screen.devicePixelRatio;
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
    function yTicks(u: AxesChart, min: number, max: number): Tick[] {
      // Vertical: a label takes its line's height.
      return tickMaker.ticks(min, max, {
        kind: "bytes",
        length: u.bbox.height / screen.devicePixelRatio,
        extent: () => 14,
        gap: 10,
      });
    }
    // The labels of the ticks each axis's splits chose, for its values (uPlot asks for them next).
    const tickLabels = { x: new Map<number, string>(), y: new Map<number, string>() };
    function splitsOf(which: "x" | "y") {
      return (u: AxesChart, _axis: number, min: number, max: number) => {
        const found = which === "x" ? xTicks(u, min, max) : yTicks(u, min, max);
        drawnTicks[which] = found.map((tick) => ({ ...tick, width: labelWidth(tick.label) }));
        tickLabels[which] = new Map(found.map((tick) => [tick.value, tick.label]));
        return found.map((tick) => tick.value);
      };
    }
    function valuesOf(which: "x" | "y") {
      return (_u: AxesChart, splits: number[]) => splits.map((value) => tickLabels[which].get(value) ?? "");
    }
    function markLine(event: number): string[] {
      if (markAt.length === 0) return [];
      const mark = markBefore(event);
      return [mark < 0 ? "before the first mark" : `after mark ${mark}: ${markNames[mark] ?? ""}`];
    }
    function setMarks(at: Uint32Array, names: string[]): void {
      markAt = at;
      markNames = names;
    }
    return { setMarks, splitsOf, valuesOf, markLine, drawnTicks };
  }
  return { axes };
}
