// The recorder a Device writes traces with: dense ids keyed by the device's objects, the events kept in the
// compact form of trace-recorder-chunks.ts (no JavaScript object per event, so a long trace costs the collector
// nothing), or handed on chunk by chunk to a sink (a file writer) and not kept. An optional limit of events
// ends the recording when reached: the trace keeps what came before, and its header says so.

import type { Trace, TraceAllocatorSetup, TraceEvent, TraceHeader, TraceOpening } from "./trace-format.js";
import {
  CHUNK_WORDS,
  decodeWords,
  NdjsonEncoder,
  Tag,
  type TraceTables,
  wordsToNdjson,
} from "./trace-recorder-chunks.js";

/** What a {@link TraceRecorder} does beyond keeping every event. */
export interface TraceRecorderOptions {
  /**
   * The most events recorded after the opening (annotations count: marks, label and stack definitions);
   * the first record that would pass it ends the recording (nothing later is recorded, the header says
   * `limit_reached`). Default: none.
   */
  readonly limit?: number;
  /**
   * Takes each full chunk of events instead of the recorder keeping it (a file writer): `words[0, length)`
   * in the compact form, decoded with {@link TraceRecorder.ndjsonOf}. The chunk is the sink's from then on.
   * `finish()` hands on the last, partial chunk; the `Trace` it gives then holds no events.
   */
  readonly sink?: (words: Float64Array, length: number) => void;
  /** Fields added to the header (a Device's `file`, `stack_frames`). */
  readonly header?: Readonly<Record<string, unknown>>;
}

const LIMIT_CODES = { memory: 0, cache: 1, wired: 2 } as const;
// Chunks given back by a sink and kept for reuse.
const SPARE_CHUNKS = 8;

/**
 * Records events while a trace is running; ids are dense, in allocation (and mapping) order. Memory: 8 to
 * 24 bytes an event (an allocation with its free, 24 bytes), the strings once each, and an entry per live
 * object; with a sink, one chunk.
 */
export class TraceRecorder {
  readonly #name: string;
  readonly #openingEvents: number;
  readonly #allocator: TraceAllocatorSetup | undefined;
  readonly #limit: number;
  readonly #sink: TraceRecorderOptions["sink"];
  readonly #extra: Readonly<Record<string, unknown>>;
  // Sealed chunks (kept without a sink) and their lengths in words; the chunk being written.
  readonly #chunks: Float64Array[] = [];
  readonly #lengths: number[] = [];
  #words: Float64Array = new Float64Array(CHUNK_WORDS);
  // Chunks a sink gave back (ndjsonBytesOf), written into again; the encoder of their bytes.
  readonly #spare: Float64Array[] = [];
  #encoder: NdjsonEncoder | undefined;
  #used = 0;
  #events = 0;
  #limitReached = false;
  #dropped = 0;
  #nextAllocation = 0;
  #nextMapping = 0;
  #liveBytes = 0;
  #peakLiveBytes = 0;
  // The strings events name, each once: marks by name, labels by text, stacks by their frames' text.
  readonly #tables = { marks: [] as string[], labels: [] as string[], stacks: [] as (readonly string[])[] };
  readonly #markIds = new Map<string, number>();
  readonly #labelIds = new Map<string, number>();
  readonly #stackIds = new Map<string, number>();
  // Per live object of the device: its id in this trace and, for buffers, the bytes requested.
  readonly #buffers = new Map<object, { id: number; bytes: number }>();
  readonly #mappings = new Map<object, number>();
  // Buffers this trace quarantined, not yet given back: their ids.
  readonly #quarantined = new Map<object, number>();

  /** Starts a trace named `name`, opening with what is live at its start. */
  constructor(
    name: string,
    opening: TraceOpening = { buffers: [], mappings: [] },
    options: TraceRecorderOptions = {},
  ) {
    this.#name = name;
    this.#allocator = opening.allocator;
    this.#limit = options.limit ?? Number.POSITIVE_INFINITY;
    this.#sink = options.sink;
    this.#extra = options.header ?? {};
    let quarantined = 0;
    for (const [buffer, bytes] of opening.quarantined ?? []) {
      this.#allocate(buffer, bytes, undefined, undefined);
      this.#quarantine(buffer);
      quarantined++;
    }
    if (quarantined > 0) {
      this.#push(Tag.ResetPeak, 0);
      this.#peakLiveBytes = this.#liveBytes;
    }
    for (const [buffer, bytes] of opening.buffers) this.#allocate(buffer, bytes, undefined, undefined);
    for (const [mapping, length, label] of opening.mappings) this.#map(mapping, length, label);
    this.#openingEvents = this.#events;
  }

  /** Events recorded so far (the opening's included). */
  get events(): number {
    return this.#events;
  }

  /** Whether the limit ended the recording. */
  get limitReached(): boolean {
    return this.#limitReached;
  }

  /**
   * Records an allocation of `bytes` requested bytes for the device's object `buffer`, with an optional
   * label and call stack (its frames, innermost first, one a line); returns its id (-1 once the limit ended
   * the recording).
   */
  allocate(buffer: object, bytes: number, label?: string, stack?: string): number {
    const needed =
      1 +
      (label !== undefined && !this.#labelIds.has(label) ? 1 : 0) +
      (stack !== undefined && !this.#stackIds.has(stack) ? 1 : 0);
    if (!this.#room(needed)) return -1;
    return this.#allocate(buffer, bytes, label, stack);
  }

  #allocate(buffer: object, bytes: number, label: string | undefined, stack: string | undefined): number {
    const labelId = label === undefined ? -1 : this.#labelId(label);
    const stackId = stack === undefined ? -1 : this.#stackId(stack);
    const id = this.#nextAllocation++;
    if (stackId >= 0) this.#push(Tag.AllocateStack, id, bytes, labelId, stackId);
    else if (labelId >= 0) this.#push(Tag.AllocateLabelled, id, bytes, labelId);
    else this.#push(Tag.Allocate, id, bytes);
    this.#buffers.set(buffer, { id, bytes });
    this.#liveBytes += bytes;
    if (this.#liveBytes > this.#peakLiveBytes) this.#peakLiveBytes = this.#liveBytes;
    return id;
  }

  /** Records the free of `buffer` (ignored for an object this trace never saw, e.g. a 0-byte buffer born earlier). */
  free(buffer: object): void {
    if (!this.#buffers.has(buffer) || !this.#room(1)) return;
    const entry = this.#forget(buffer) as { id: number };
    this.#push(Tag.Free, entry.id);
  }

  /**
   * Records the free of `buffer` while a view of it was moved away (never cached, its bytes quarantined);
   * {@link giveBack} records the end of its quarantine. Ignored for an object this trace never saw.
   */
  quarantine(buffer: object): void {
    if (this.#buffers.has(buffer) && this.#room(1)) this.#quarantine(buffer);
  }

  #quarantine(buffer: object): void {
    const entry = this.#forget(buffer) as { id: number };
    this.#push(Tag.Quarantine, entry.id);
    this.#quarantined.set(buffer, entry.id);
  }

  /** Takes `buffer` off the live ones: its entry, `undefined` for an object this trace never saw. */
  #forget(buffer: object): { id: number; bytes: number } | undefined {
    const entry = this.#buffers.get(buffer);
    if (entry === undefined) return undefined;
    this.#buffers.delete(buffer);
    this.#liveBytes -= entry.bytes;
    return entry;
  }

  /** Records that the backend gave back quarantined `buffer` (ignored unless this trace quarantined it). */
  giveBack(buffer: object): void {
    this.#end(this.#quarantined, buffer, Tag.GiveBack);
  }

  /**
   * Records a mapping of a file of `length` bytes for the device's object `mapping`, optionally labelled (a
   * Device gives the path); returns its id (-1 once the limit ended the recording).
   */
  map(mapping: object, length: number, label?: string): number {
    if (!this.#room(label !== undefined && !this.#labelIds.has(label) ? 2 : 1)) return -1;
    return this.#map(mapping, length, label);
  }

  #map(mapping: object, length: number, label: string | undefined): number {
    const labelId = label === undefined ? -1 : this.#labelId(label);
    const id = this.#nextMapping++;
    if (labelId >= 0) this.#push(Tag.MapLabelled, id, length, labelId);
    else this.#push(Tag.Map, id, length);
    this.#mappings.set(mapping, id);
    return id;
  }

  /** Records the release of `mapping` (ignored for an object this trace never saw). */
  unmap(mapping: object): void {
    this.#end(this.#mappings, mapping, Tag.Unmap);
  }

  /** Records event `tag` of the id `ids` holds for `object`, which it forgets (nothing if it holds none). */
  #end(ids: Map<object, number>, object: object, tag: Tag): void {
    const id = ids.get(object);
    if (id === undefined || !this.#room(1)) return;
    ids.delete(object);
    this.#push(tag, id);
  }

  /** Records a limit change. */
  limit(kind: "memory" | "cache" | "wired", bytes: number): void {
    if (this.#room(1)) this.#push(Tag.Limit, LIMIT_CODES[kind], bytes);
  }

  /** Records a cache clear. */
  clearCache(): void {
    if (this.#room(1)) this.#push(Tag.ClearCache, 0);
  }

  /** Records a peak reset. */
  resetPeak(): void {
    if (this.#room(1)) this.#push(Tag.ResetPeak, 0);
  }

  /** Records a mark named `name` (`["k", name]`): a step boundary, a phase. */
  mark(name: string): void {
    if (!this.#room(1)) return;
    let id = this.#markIds.get(name);
    if (id === undefined) {
      id = this.#tables.marks.length;
      this.#tables.marks.push(name);
      this.#markIds.set(name, id);
    }
    this.#push(Tag.Mark, id);
  }

  #labelId(label: string): number {
    let id = this.#labelIds.get(label);
    if (id === undefined) {
      id = this.#tables.labels.length;
      this.#tables.labels.push(label);
      this.#labelIds.set(label, id);
      this.#push(Tag.Label, id);
    }
    return id;
  }

  #stackId(stack: string): number {
    let id = this.#stackIds.get(stack);
    if (id === undefined) {
      id = this.#tables.stacks.length;
      this.#tables.stacks.push(stack === "" ? [] : stack.split("\n"));
      this.#stackIds.set(stack, id);
      this.#push(Tag.Stack, id);
    }
    return id;
  }

  /** Whether `count` more events fit under the limit; the first that does not ends the recording. */
  #room(count: number): boolean {
    if (this.#limitReached) {
      this.#dropped += count;
      return false;
    }
    // Only calls after the constructor come here: the opening is recorded whatever the limit.
    if (this.#events - this.#openingEvents + count <= this.#limit) return true;
    this.#limitReached = true;
    this.#dropped += count;
    return false;
  }

  /** Appends one event: its first word and up to three more. */
  #push(tag: Tag, id: number, a = 0, b = 0, c = 0): void {
    if (this.#used + 4 > CHUNK_WORDS) this.#seal();
    const words = this.#words;
    let used = this.#used;
    words[used++] = id * 16 + tag;
    if (tag <= Tag.AllocateStack || tag === Tag.Map || tag === Tag.MapLabelled || tag === Tag.Limit) {
      words[used++] = a;
      if (tag === Tag.AllocateLabelled || tag === Tag.AllocateStack || tag === Tag.MapLabelled)
        words[used++] = b;
      if (tag === Tag.AllocateStack) words[used++] = c;
    }
    this.#used = used;
    this.#events += 1;
  }

  /** Ends the chunk being written: handed to the sink, or kept. */
  #seal(): void {
    if (this.#sink !== undefined) this.#sink(this.#words, this.#used);
    else {
      this.#chunks.push(this.#words);
      this.#lengths.push(this.#used);
    }
    this.#words = this.#spare.pop() ?? new Float64Array(CHUNK_WORDS);
    this.#used = 0;
  }

  /** The NDJSON lines of a chunk the sink was given (each line ended by a newline). */
  ndjsonOf(words: Float64Array, length: number): string {
    return wordsToNdjson(words, length, this.#tables);
  }

  /**
   * The NDJSON bytes of a chunk the sink was given, as {@link ndjsonOf}: a view of a buffer the recorder
   * reuses, valid until the next call. The chunk goes back to the recorder, which writes its next events
   * into it (no new chunk for the collector to account for).
   */
  ndjsonBytesOf(words: Float64Array, length: number): Uint8Array {
    this.#encoder ??= new NdjsonEncoder();
    const bytes = this.#encoder.encode(words, length, this.#tables);
    if (this.#spare.length < SPARE_CHUNKS) this.#spare.push(words);
    return bytes;
  }

  /**
   * The header a file streamed by a sink opens with: what is known at the start (the name, the setup, the
   * opening, the limit), without the counts only the end knows.
   */
  openingHeader(): TraceHeader {
    return {
      name: this.#name,
      workload: "recorded by @nuvec/device",
      source: "nuvec Device.startTrace",
      opening_events: this.#openingEvents,
      ...(this.#limit === Number.POSITIVE_INFINITY ? {} : { limit: this.#limit }),
      ...this.#extra,
      ...(this.#allocator === undefined ? {} : { allocator: this.#allocator }),
    };
  }

  /**
   * The trace so far: its header (the counts, and `limit_reached` and `events_dropped` under a limit) and its
   * events, decoded when first read. With a sink, the last chunk goes to the sink and `events` is empty.
   */
  finish(): Trace {
    const header: TraceHeader = {
      name: this.#name,
      workload: "recorded by @nuvec/device",
      source: "nuvec Device.startTrace",
      events: this.#events,
      opening_events: this.#openingEvents,
      allocations: this.#nextAllocation,
      live_at_end: this.#buffers.size,
      mapped_at_end: this.#mappings.size,
      peak_live_bytes: this.#peakLiveBytes,
      ...(this.#limit === Number.POSITIVE_INFINITY
        ? {}
        : { limit: this.#limit, limit_reached: this.#limitReached, events_dropped: this.#dropped }),
      ...this.#extra,
      ...(this.#allocator === undefined ? {} : { allocator: this.#allocator }),
    };
    if (this.#sink !== undefined) {
      if (this.#used > 0) this.#seal();
      return compactTrace(header, [], [], this.#tables);
    }
    return compactTrace(header, [...this.#chunks, this.#words], [...this.#lengths, this.#used], this.#tables);
  }
}

/** A {@link Trace} over chunks of the compact form: `events` decoded once, when first read. */
function compactTrace(
  header: TraceHeader,
  chunks: readonly Float64Array[],
  lengths: readonly number[],
  tables: TraceTables,
): Trace {
  let events: TraceEvent[] | undefined;
  return {
    header,
    get events(): TraceEvent[] {
      if (events === undefined) {
        const decoded: TraceEvent[] = [];
        const push = (event: TraceEvent) => {
          decoded.push(event);
        };
        chunks.forEach((words, index) => {
          decodeWords(words, lengths[index] as number, tables, push);
        });
        events = decoded;
      }
      return events;
    },
    toNdjson(): string {
      let text = `${JSON.stringify(header)}\n`;
      chunks.forEach((words, index) => {
        text += wordsToNdjson(words, lengths[index] as number, tables);
      });
      return text;
    },
  };
}
