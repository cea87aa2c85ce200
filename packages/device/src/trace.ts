// Memory history in the trace format of nuvec's shared traces (one header object, then one event per line),
// so a user can record their own workload and replay it under other limits. The event and header types are
// the allocator's (its replay applies every kind): `["a", id, bytes]`, `["f", id]` as the shared traces, and
// the kinds only a Device records: `["m", id, length]` a file mapped, `["u", id]` its release,
// `["l", "memory" | "cache" | "wired", bytes]` a limit set, `["c"]` the cache cleared, `["p"]` the peak reset.
import type { TraceEvent, TraceHeader } from "@nuvec/allocator";

/** A recorded trace: its header and events, and the NDJSON text to save (gzip it to match the shared files). */
export interface DeviceTrace {
  readonly header: TraceHeader;
  readonly events: readonly TraceEvent[];
  /** The trace as NDJSON text: the header line, then one line per event. */
  toNdjson(): string;
}

/** Records events while a trace is running; ids are dense, in allocation (and mapping) order. */
export class TraceRecorder {
  readonly #events: TraceEvent[] = [];
  readonly #name: string;
  #nextAllocation = 0;
  #nextMapping = 0;
  #liveBytes = 0;
  #peakLiveBytes = 0;
  readonly #requested = new Map<number, number>();

  constructor(name: string) {
    this.#name = name;
  }

  /** Records an allocation of `bytes` requested bytes; returns its id. */
  allocate(bytes: number): number {
    const id = this.#nextAllocation++;
    this.#events.push(["a", id, bytes]);
    this.#requested.set(id, bytes);
    this.#liveBytes += bytes;
    if (this.#liveBytes > this.#peakLiveBytes) this.#peakLiveBytes = this.#liveBytes;
    return id;
  }

  /** Records the free of allocation `id` (ignored if `id` was not allocated in this trace). */
  free(id: number): void {
    const bytes = this.#requested.get(id);
    if (bytes === undefined) return;
    this.#requested.delete(id);
    this.#liveBytes -= bytes;
    this.#events.push(["f", id]);
  }

  /** Records a mapping of a file of `length` bytes; returns its id. */
  map(length: number): number {
    const id = this.#nextMapping++;
    this.#events.push(["m", id, length]);
    return id;
  }

  /** Records the release of mapping `id`. */
  unmap(id: number): void {
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
      allocations: this.#nextAllocation,
      live_at_end: this.#requested.size,
      peak_live_bytes: this.#peakLiveBytes,
    };
    return {
      header,
      events,
      toNdjson: () => `${[header, ...events].map((line) => JSON.stringify(line)).join("\n")}\n`,
    };
  }
}
