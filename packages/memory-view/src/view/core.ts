// The computations of the memory view, shared by the page and the tests: one self-contained function (no
// imports, no references outside its body) so that the report inlines its source text as it is, and the
// tests run the very code the browser runs.

/** A series of the view: one value after every event. */
export interface CoreSeries {
  name: string;
  values: Float64Array;
}

/** The workload and the policies' figures, event by event, as the view computes them. */
export interface CoreModel {
  /** Events of the trace. */
  events: number;
  /** Allocations, in allocation order: their allocating event, freeing event (`events` if never), size. */
  start: Uint32Array;
  end: Uint32Array;
  size: Float64Array;
  /** Bytes of live allocations (requested sizes) after every event. */
  live: Float64Array;
  /** Per policy: `active` and `active + cache` (reserved) after every event. */
  policies: { name: string; active: Float64Array; reserved: Float64Array }[];
  /** Other reserved-memory series (PyTorch's own), after every event. */
  external: CoreSeries[];
  /** Bytes of mapped files after every event (drawn as their own band, above the reserved memory). */
  mapped: Float64Array;
}

/** The encoded inputs of {@link CoreModel} (what the report embeds). */
export interface CoreInput {
  events: number;
  start: Uint32Array;
  end: Uint32Array;
  size: Float64Array;
  policies: { name: string; charged: Float64Array; reservedAt: Uint32Array; reservedValue: Float64Array }[];
  external: { name: string; at: Uint32Array; value: Float64Array }[];
  /** Bytes of mapped files from event `at[k]` on; none when left out. */
  mapped?: { at: Uint32Array; value: Float64Array };
}

/** One series aggregated per column: the first, smallest, largest and last value of each. */
export interface ColumnSeries {
  first: Float64Array;
  min: Float64Array;
  max: Float64Array;
  last: Float64Array;
  /** 1 where the smallest value comes before the largest in the column. */
  minFirst: Uint8Array;
}

/** A range of events cut into columns (one per pixel or per event, whichever is fewer). */
export interface Columns {
  from: number;
  to: number;
  count: number;
  /** Column `c` covers events `bounds[c]` to `bounds[c + 1] - 1`. */
  bounds: Uint32Array;
  /** The event whose state column `c` draws: where live bytes are highest (the first such event). */
  rep: Uint32Array;
  live: ColumnSeries;
  /** Per policy: active and reserved. */
  active: ColumnSeries[];
  reserved: ColumnSeries[];
  external: ColumnSeries[];
  mapped: ColumnSeries;
}

/** The view's computations; `memoryViewCore()` returns them (the page calls it from its inlined source). */
export interface MemoryViewCore {
  build(input: CoreInput): CoreModel;
  columns(model: CoreModel, from: number, to: number, count: number): Columns;
  liveAt(model: CoreModel, event: number): number[];
  hit(model: CoreModel, event: number, bytes: number): { index: number; offset: number } | undefined;
  sizeClass(bytes: number): number;
  SIZE_CLASSES: { label: string; below: number }[];
  formatBytes(bytes: number): string;
  /** Per label with allocations: how many and their bytes, most bytes first, at most 200 labels. */
  labelSummary(
    label: ArrayLike<number>,
    size: ArrayLike<number>,
    labels: number,
  ): { label: number; count: number; bytes: number }[];
  /** A label's text on one line of at most 80 characters (a stack's first frames). */
  shortLabel(text: string): string;
  /** Per allocation: 1 unless its label is `chosen`. */
  dimmedExcept(label: ArrayLike<number>, chosen: number): Uint8Array;
}

/** The view's computations. Self-contained: the report inlines this function's source. */
export function memoryViewCore(): MemoryViewCore {
  const SIZE_CLASSES = [
    { label: "< 64 KiB", below: 64 * 1024 },
    { label: "64 KiB – 1 MiB", below: 1024 * 1024 },
    { label: "1 – 16 MiB", below: 16 * 1024 * 1024 },
    { label: "16 – 128 MiB", below: 128 * 1024 * 1024 },
    { label: "128 MiB – 1 GiB", below: 1024 * 1024 * 1024 },
    { label: "≥ 1 GiB", below: Number.POSITIVE_INFINITY },
  ];

  function sizeClass(bytes: number): number {
    let index = 0;
    while (bytes >= (SIZE_CLASSES[index] as { below: number }).below) index += 1;
    return index;
  }

  function formatBytes(bytes: number): string {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let value = Math.abs(bytes);
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    const text = unit === 0 ? String(value) : value.toFixed(2);
    return `${bytes < 0 ? "-" : ""}${text} ${units[unit]}`;
  }

  /** Per-event sums of `weights` over the live allocations (a difference array, then a running sum). */
  function liveSums(
    events: number,
    start: Uint32Array,
    end: Uint32Array,
    weights: Float64Array,
  ): Float64Array {
    const values = new Float64Array(events);
    for (let index = 0; index < start.length; index += 1) {
      const weight = weights[index] as number;
      const from = start[index] as number;
      values[from] = (values[from] as number) + weight;
      const stop = end[index] as number;
      if (stop < events) values[stop] = (values[stop] as number) - weight;
    }
    let sum = 0;
    for (let event = 0; event < events; event += 1) {
      sum += values[event] as number;
      values[event] = sum;
    }
    return values;
  }

  /** A step series from its change points (value `value[k]` from event `at[k]` on; 0 before the first). */
  function steps(events: number, at: Uint32Array, value: Float64Array): Float64Array {
    const values = new Float64Array(events);
    let next = 0;
    let current = 0;
    for (let event = 0; event < events; event += 1) {
      while (next < at.length && (at[next] as number) <= event) {
        current = value[next] as number;
        next += 1;
      }
      values[event] = current;
    }
    return values;
  }

  function build(input: CoreInput): CoreModel {
    const { events, start, end, size } = input;
    return {
      events,
      start,
      end,
      size,
      live: liveSums(events, start, end, size),
      policies: input.policies.map((policy) => ({
        name: policy.name,
        active: liveSums(events, start, end, policy.charged),
        reserved: steps(events, policy.reservedAt, policy.reservedValue),
      })),
      external: input.external.map((series) => ({
        name: series.name,
        values: steps(events, series.at, series.value),
      })),
      mapped:
        input.mapped === undefined
          ? new Float64Array(events)
          : steps(events, input.mapped.at, input.mapped.value),
    };
  }

  function emptySeries(count: number): ColumnSeries {
    return {
      first: new Float64Array(count),
      min: new Float64Array(count),
      max: new Float64Array(count),
      last: new Float64Array(count),
      minFirst: new Uint8Array(count),
    };
  }

  function aggregate(values: Float64Array, bounds: Uint32Array, count: number): ColumnSeries {
    const series = emptySeries(count);
    for (let column = 0; column < count; column += 1) {
      const from = bounds[column] as number;
      const to = bounds[column + 1] as number;
      let min = values[from] as number;
      let max = min;
      let minAt = from;
      let maxAt = from;
      for (let event = from + 1; event < to; event += 1) {
        const value = values[event] as number;
        if (value < min) {
          min = value;
          minAt = event;
        } else if (value > max) {
          max = value;
          maxAt = event;
        }
      }
      series.first[column] = values[from] as number;
      series.min[column] = min;
      series.max[column] = max;
      series.last[column] = values[to - 1] as number;
      series.minFirst[column] = minAt <= maxAt ? 1 : 0;
    }
    return series;
  }

  function columns(model: CoreModel, fromEvent: number, toEvent: number, wanted: number): Columns {
    const from = Math.max(0, Math.min(model.events - 1, Math.floor(fromEvent)));
    const to = Math.max(from + 1, Math.min(model.events, Math.ceil(toEvent)));
    const count = Math.max(1, Math.min(Math.floor(wanted), to - from));
    const bounds = new Uint32Array(count + 1);
    for (let column = 0; column <= count; column += 1) {
      bounds[column] = from + Math.floor(((to - from) * column) / count);
    }
    const rep = new Uint32Array(count);
    const live = model.live;
    for (let column = 0; column < count; column += 1) {
      let best = bounds[column] as number;
      for (let event = best + 1; event < (bounds[column + 1] as number); event += 1) {
        if ((live[event] as number) > (live[best] as number)) best = event;
      }
      rep[column] = best;
    }
    return {
      from,
      to,
      count,
      bounds,
      rep,
      live: aggregate(live, bounds, count),
      active: model.policies.map((policy) => aggregate(policy.active, bounds, count)),
      reserved: model.policies.map((policy) => aggregate(policy.reserved, bounds, count)),
      external: model.external.map((series) => aggregate(series.values, bounds, count)),
      mapped: aggregate(model.mapped, bounds, count),
    };
  }

  /** The allocations live after `event`, in allocation order (the order they are stacked in). */
  function liveAt(model: CoreModel, event: number): number[] {
    const indices: number[] = [];
    const { start, end } = model;
    for (let index = 0; index < start.length && (start[index] as number) <= event; index += 1) {
      if ((end[index] as number) > event) indices.push(index);
    }
    return indices;
  }

  /** The allocation whose band holds `bytes` after `event`, and where its band starts. */
  function hit(
    model: CoreModel,
    event: number,
    bytes: number,
  ): { index: number; offset: number } | undefined {
    if (bytes < 0) return undefined;
    let offset = 0;
    for (const index of liveAt(model, event)) {
      const size = model.size[index] as number;
      if (bytes < offset + size) return { index, offset };
      offset += size;
    }
    return undefined;
  }

  function labelSummary(label: ArrayLike<number>, size: ArrayLike<number>, labels: number) {
    const count = new Float64Array(labels);
    const bytes = new Float64Array(labels);
    for (let index = 0; index < label.length; index += 1) {
      const which = label[index] as number;
      if (which < 0 || which >= labels) continue;
      count[which] = (count[which] as number) + 1;
      bytes[which] = (bytes[which] as number) + ((size[index] as number) ?? 0);
    }
    const rows: { label: number; count: number; bytes: number }[] = [];
    for (let which = 0; which < labels; which += 1) {
      if ((count[which] as number) > 0)
        rows.push({ label: which, count: count[which] as number, bytes: bytes[which] as number });
    }
    rows.sort((a, b) => b.bytes - a.bytes || a.label - b.label);
    return rows.slice(0, 200);
  }

  function shortLabel(text: string): string {
    const line = text.replace(/\s*\n\s*/g, " · ");
    return line.length > 80 ? `${line.slice(0, 79)}…` : line;
  }

  function dimmedExcept(label: ArrayLike<number>, chosen: number): Uint8Array {
    const dimmed = new Uint8Array(label.length);
    for (let index = 0; index < label.length; index += 1) dimmed[index] = label[index] === chosen ? 0 : 1;
    return dimmed;
  }

  return {
    build,
    columns,
    liveAt,
    hit,
    sizeClass,
    SIZE_CLASSES,
    formatBytes,
    labelSummary,
    shortLabel,
    dimmedExcept,
  };
}
