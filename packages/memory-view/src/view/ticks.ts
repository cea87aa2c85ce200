// The memory view's axis ticks: round values (1, 2, 5 × 10^k for counts; 1, 2, 4 … 512 of a binary unit for
// bytes) at the finest step whose labels, as wide as the page measures them, never overlap. Self-contained
// like the core (the report inlines `memoryViewTicks`'s source): the measure comes in as an argument.

/** One tick: where it goes (in the axis's values) and its label. */
export interface Tick {
  value: number;
  label: string;
}

/** How {@link MemoryViewTicks.ticks} lays ticks out along an axis. */
export interface TickLayout {
  /** `"count"`: events, marks; `"bytes"`: memory. */
  kind: "count" | "bytes";
  /** The axis's length in pixels. */
  length: number;
  /** Pixels a label takes along the axis (its width on a horizontal axis, its height on a vertical one). */
  extent(label: string): number;
  /** Pixels kept free between neighbouring labels; default 8. */
  gap?: number;
  /** Where value `value` lies, in pixels from the axis's start; default linear from `min` to `max`. */
  position?(value: number): number;
  /** The label of value `value`; default the kind's (a count with separators, bytes in a binary unit). */
  label?(value: number, step: number): string;
}

/** The tick functions; `memoryViewTicks()` returns them (the page calls it from its inlined source). */
export interface MemoryViewTicks {
  ticks(min: number, max: number, layout: TickLayout): Tick[];
  /** The steps tried, finest first, for a range of `span` (in the axis's values). */
  steps(kind: "count" | "bytes", span: number): number[];
  countLabel(value: number): string;
  byteLabel(value: number, step: number, max: number): string;
}

/** The tick functions of the memory view. Self-contained: the report inlines this function's source. */
export function memoryViewTicks(): MemoryViewTicks {
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

  function steps(kind: "count" | "bytes", span: number): number[] {
    const out: number[] = [];
    const top = Math.max(1, span) * 2;
    if (kind === "count") {
      for (let power = 1; power <= top * 10; power *= 10) {
        for (const factor of [1, 2, 5]) if (power * factor <= top) out.push(power * factor);
      }
    } else {
      for (let unit = 0; unit < UNITS.length; unit += 1) {
        for (let factor = 1; factor <= 512; factor *= 2) {
          const step = factor * 1024 ** unit;
          if (step <= top) out.push(step);
        }
      }
    }
    if (out.length === 0) out.push(1);
    return out;
  }

  function countLabel(value: number): string {
    const digits = String(Math.round(Math.abs(value)));
    let grouped = "";
    for (let index = 0; index < digits.length; index += 1) {
      if (index > 0 && (digits.length - index) % 3 === 0) grouped += ",";
      grouped += digits[index];
    }
    return value < 0 ? `-${grouped}` : grouped;
  }

  /** A byte value in one unit for the whole axis: the largest below `max`, with the decimals `step` needs. */
  function byteLabel(value: number, step: number, max: number): string {
    if (value === 0) return "0";
    let unit = 0;
    while (unit < UNITS.length - 1 && 1024 ** (unit + 1) <= Math.max(max, step)) unit += 1;
    let decimals = 0;
    while (decimals <= 2 && !Number.isInteger(Math.round((step / 1024 ** unit) * 10 ** decimals * 1e6) / 1e6))
      decimals += 1;
    if (decimals > 2) {
      // A step too fine for the axis's unit (128 MiB on a GiB axis): the step's own unit, whole numbers.
      unit = 0;
      while (unit < UNITS.length - 1 && 1024 ** (unit + 1) <= step) unit += 1;
      decimals = 0;
    }
    return `${(value / 1024 ** unit).toFixed(decimals)} ${UNITS[unit]}`;
  }

  function ticks(min: number, max: number, layout: TickLayout): Tick[] {
    const span = max - min;
    if (!(span > 0) || !(layout.length > 0) || !Number.isFinite(span)) return [];
    const gap = layout.gap ?? 8;
    const position = layout.position ?? ((value: number) => ((value - min) / span) * layout.length);
    const label =
      layout.label ??
      ((value: number, step: number) =>
        layout.kind === "count"
          ? countLabel(value)
          : byteLabel(value, step, Math.max(Math.abs(min), Math.abs(max))));
    const apart = (before: Tick, after: Tick) =>
      position(after.value) - position(before.value) >=
      (layout.extent(before.label) + layout.extent(after.label)) / 2 + gap;
    let best: Tick[] = [];
    for (const step of steps(layout.kind, span)) {
      // No step with more ticks than pixels can fit: skip them unmeasured.
      if (span / step > layout.length / 2) continue;
      const found: Tick[] = [];
      for (let value = Math.ceil(min / step) * step; value <= max; value += step) {
        found.push({ value, label: label(value, step) });
      }
      if (found.length === 0) continue;
      if (layout.position !== undefined) {
        // Positions of the caller's (marks bunched at some events): the step that would fit were they even,
        // then each tick kept only where it stands clear of the last one kept.
        const widest = found.reduce((most, tick) => Math.max(most, layout.extent(tick.label)), 0);
        if (found.length * (widest + gap) > layout.length && found.length > 1) {
          best = [found[0] as Tick];
          continue;
        }
        const kept: Tick[] = [found[0] as Tick];
        for (const tick of found.slice(1)) if (apart(kept[kept.length - 1] as Tick, tick)) kept.push(tick);
        return kept;
      }
      let fits = true;
      for (let index = 1; index < found.length && fits; index += 1) {
        fits = apart(found[index - 1] as Tick, found[index] as Tick);
      }
      if (fits) return found;
      best = [found[0] as Tick];
    }
    return best;
  }

  return { ticks, steps, countLabel, byteLabel };
}
