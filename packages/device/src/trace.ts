// Memory history in the trace format of nuvec's shared traces (one header object, then one event per line),
// so a user can record their own workload and replay it under other limits. The event and header types are
// the allocator's (its replay applies every kind): `["a", id, bytes]`, `["f", id]` as the shared traces, and
// the kinds only a Device records: `["m", id, length]` a file mapped, `["u", id]` its release,
// `["l", "memory" | "cache" | "wired", bytes]` a limit set, `["c"]` the cache cleared, `["p"]` the peak reset.
//
// A trace is a self-contained history of its window: it opens with the buffers and mappings live when it
// started (as "a" and "m" events, counted in the header's `opening_events`), so every later free or unmap
// names an id of this trace. Ids are the recorder's own, keyed by the device's objects, so back-to-back
// traces never reuse an earlier trace's ids and an object born before the trace is freed under its own id.
import type { TraceEvent, TraceHeader } from "@nuvec/allocator";

/** A recorded trace: its header and events, and the NDJSON text to save (gzip it to match the shared files). */
export interface DeviceTrace {
  readonly header: TraceHeader;
  readonly events: readonly TraceEvent[];
  /** The trace as NDJSON text: the header line, then one line per event. */
  toNdjson(): string;
}

/** What was live when a trace started: each entry an object of the device and its requested bytes (or length). */
export interface TraceOpening {
  readonly buffers: Iterable<readonly [object, number]>;
  readonly mappings: Iterable<readonly [object, number]>;
}

/** Records events while a trace is running; ids are dense, in allocation (and mapping) order. */
export class TraceRecorder {
  readonly #events: TraceEvent[] = [];
  readonly #name: string;
  readonly #openingEvents: number;
  #nextAllocation = 0;
  #nextMapping = 0;
  #liveBytes = 0;
  #peakLiveBytes = 0;
  // Per live object of the device: its id in this trace and, for buffers, the bytes requested.
  readonly #buffers = new Map<object, { id: number; bytes: number }>();
  readonly #mappings = new Map<object, number>();

  /** Starts a trace named `name`, opening with what is live at its start. */
  constructor(name: string, opening: TraceOpening = { buffers: [], mappings: [] }) {
    this.#name = name;
    for (const [buffer, bytes] of opening.buffers) this.allocate(buffer, bytes);
    for (const [mapping, length] of opening.mappings) this.map(mapping, length);
    this.#openingEvents = this.#events.length;
  }

  /** Records an allocation of `bytes` requested bytes for the device's object `buffer`; returns its id. */
  allocate(buffer: object, bytes: number): number {
    const id = this.#nextAllocation++;
    this.#events.push(["a", id, bytes]);
    this.#buffers.set(buffer, { id, bytes });
    this.#liveBytes += bytes;
    if (this.#liveBytes > this.#peakLiveBytes) this.#peakLiveBytes = this.#liveBytes;
    return id;
  }

  /** Records the free of `buffer` (ignored for an object this trace never saw, e.g. a 0-byte buffer born earlier). */
  free(buffer: object): void {
    const entry = this.#buffers.get(buffer);
    if (entry === undefined) return;
    this.#buffers.delete(buffer);
    this.#liveBytes -= entry.bytes;
    this.#events.push(["f", entry.id]);
  }

  /** Records a mapping of a file of `length` bytes for the device's object `mapping`; returns its id. */
  map(mapping: object, length: number): number {
    const id = this.#nextMapping++;
    this.#events.push(["m", id, length]);
    this.#mappings.set(mapping, id);
    return id;
  }

  /** Records the release of `mapping` (ignored for an object this trace never saw). */
  unmap(mapping: object): void {
    const id = this.#mappings.get(mapping);
    if (id === undefined) return;
    this.#mappings.delete(mapping);
    this.#events.push(["u", id]);
  }

  /** Records a limit change. */
  limit(kind: "memory" | "cache" | "wired", bytes: number): void {
    this.#events.push(["l", kind, bytes]);
  }

  /** Records a cache clear. */
  clearCache(): void {
    this.#events.push(["c"]);
  }

  /** Records a peak reset. */
  resetPeak(): void {
    this.#events.push(["p"]);
  }

  /** The trace so far. */
  finish(): DeviceTrace {
    const events = this.#events.slice();
    const header: TraceHeader = {
      name: this.#name,
      workload: "recorded by @nuvec/device",
      source: "nuvec Device.startTrace",
      events: events.length,
      opening_events: this.#openingEvents,
      allocations: this.#nextAllocation,
      live_at_end: this.#buffers.size,
      mapped_at_end: this.#mappings.size,
      peak_live_bytes: this.#peakLiveBytes,
    };
    return {
      header,
      events,
      toNdjson: () => `${[header, ...events].map((line) => JSON.stringify(line)).join("\n")}\n`,
    };
  }
}
