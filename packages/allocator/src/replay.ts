import { FormatError, type MemoryStats, OutOfMemoryError, PAGE } from "@nuvec/stats";
import type { Allocation, Mapping } from "./allocation.js";
import { CachingAllocator } from "./allocator.js";
import type { BufferSource } from "./buffer-source.js";
import type { AllocatorCounters } from "./counters.js";
import { type AllocatorPolicy, type BoundedRelease, DEFAULT_POLICY } from "./options.js";
import type { SegmentOptions } from "./segments.js";
import {
  isByteCount,
  isTraceEvent,
  type TraceAllocate,
  type TraceAllocatorSetup,
  type TraceEvent,
  type TraceFree,
  type TraceHeader,
} from "./trace-format.js";

/** The device a replay pretends to run on, and the settings applied right after opening it. */
export interface ReplayOptions {
  /** Recommended max working set (`W`); default 8 GiB. */
  workingSet?: number;
  /** Memory size (`M`); default twice the working set. */
  memorySize?: number;
  /** Set right after opening (so the cache limit keeps its default), as `setMemoryLimit`. */
  memoryLimit?: number;
  /** Set right after opening, as `setCacheLimit`. */
  cacheLimit?: number;
  /** The cache policy; default `"bounded"`, as an allocator's. */
  policy?: AllocatorPolicy;
  /** The bounded policy's ratio; default 1.3. */
  reserveRatio?: number;
  /** Which buffer the bounded policy releases first; default `"least-recent"`. */
  boundedRelease?: BoundedRelease;
  /** The segments policy's sizes (a Device's trace header records the ones it ran with). */
  segments?: Partial<SegmentOptions>;
  /** Default `Number.MAX_SAFE_INTEGER`: the traces come from another device. */
  maxBufferLength?: number;
  /** Default 499000, Metal's. */
  resourceLimit?: number;
  /** Default 16 KiB. */
  pageSize?: number;
  /**
   * The map granularity of a device that maps memory into reserved address space (CUDA's): the segments
   * policy's large pool is then expandable, as on that device. Default: none.
   */
  mapGranularity?: number;
  /** `"throw"` (default) stops at the first refusal; `"skip"` counts it and ignores that id's free. */
  outOfMemory?: "throw" | "skip";
  /** Called after every event, with its position among the events (the header excluded). */
  onEvent?: (event: TraceEvent, index: number, allocator: CachingAllocator<number>) => void;
}

/** What a replay ends with. */
export interface ReplayResult {
  /** The trace's header, when the events began with one. */
  header: TraceHeader | undefined;
  /** Statistics after the last event. */
  stats: MemoryStats;
  /** Counters after the last event. */
  counters: AllocatorCounters;
  /** Events replayed (the header excluded). */
  events: number;
  /** Wall-clock nanoseconds per event of the replay loop (reading and parsing excluded; checking included). */
  nsPerEvent: number;
}

/**
 * A buffer source with no memory behind it: buffers are serial numbers. For replays, tests and benchmarks.
 */
export class CountingBufferSource implements BufferSource<number> {
  readonly recommendedMaxWorkingSetSize: number;
  readonly memorySize: number;
  readonly maxBufferLength: number;
  readonly resourceLimit: number;
  readonly pageSize: number;
  /** Buffers made so far. */
  acquired = 0;
  /** Buffers given back so far. */
  released = 0;
  /** Ranges made so far (the segments policy's blocks; they are no system buffers). */
  ranges = 0;

  constructor(facts: {
    workingSet: number;
    memorySize?: number;
    maxBufferLength?: number;
    resourceLimit?: number;
    pageSize?: number;
  }) {
    this.recommendedMaxWorkingSetSize = facts.workingSet;
    this.memorySize = facts.memorySize ?? 2 * facts.workingSet;
    this.maxBufferLength = facts.maxBufferLength ?? Number.MAX_SAFE_INTEGER;
    this.resourceLimit = facts.resourceLimit ?? 499_000;
    this.pageSize = facts.pageSize ?? PAGE;
  }

  acquire(_bytes: number): number {
    return ++this.acquired;
  }

  release(_buffer: number): void {
    this.released++;
  }

  range(_segment: number, _offset: number, _length: number): number {
    return -++this.ranges;
  }
}

/**
 * A {@link CountingBufferSource} that also reserves address space and maps memory into it, as a CUDA device
 * does: the segments policy's large pool is then one expandable segment. Map calls count as `acquired`,
 * unmaps as `released`.
 */
export class CountingMappingSource extends CountingBufferSource {
  /** The unit of map offsets and lengths. */
  readonly mapGranularity: number;
  /** Address ranges reserved so far. */
  reservations = 0;

  constructor(facts: ConstructorParameters<typeof CountingBufferSource>[0] & { mapGranularity: number }) {
    super(facts);
    this.mapGranularity = facts.mapGranularity;
  }

  reserve(_capacity: number): number {
    this.reservations++;
    return -1e15 - this.reservations;
  }

  map(_space: number, _offset: number, _length: number): void {
    this.acquired++;
  }

  unmap(_space: number, _offset: number, _length: number): void {
    this.released++;
  }

  override release(buffer: number): void {
    if (buffer <= -1e15) return;
    super.release(buffer);
  }
}

const DEFAULT_WORKING_SET = 8 * 1024 ** 3;

function now(): number {
  const clock = (globalThis as { performance?: { now(): number } }).performance;
  return clock === undefined ? Date.now() : clock.now();
}

function badEvent(index: number, event: unknown, why: string): FormatError {
  let text: string;
  try {
    text = JSON.stringify(event) ?? String(event);
  } catch {
    text = String(event);
  }
  return new FormatError("ERR_NUVEC_TRACE_EVENT", `trace event ${index} (${text.slice(0, 80)}): ${why}`);
}

const UNUSED = 0;
const LIVE = 1;
const RELEASED = 2;
// Freed with a view moved away: released, its bytes still held until a give-back event.
const QUARANTINED = 3;
// Ids below this are tracked in a byte array (one byte per id: dense ids, as every trace writer makes them);
// larger ids in a Map, so a hostile id like 2^50 costs one entry, not an array that large.
const DENSE_IDS = 1 << 26;
// Ids below this have their live allocation's slot in a typed array (4 bytes per id, at most 4 MiB); a
// longer trace's later ids go through a Map (slower, and bounded by what is live, not by the trace).
const INDEXED_IDS = 1 << 20;

/** What the refusals of one kind of id (allocations or mappings) say. */
interface IdRefusals {
  /** An allocate or map event of an id already used. */
  readonly reused: string;
  /** A free or unmap event of an id never allocated or mapped. */
  readonly unknown: string;
  /** A second free or unmap of an id. */
  readonly twice: string;
}

/** The state (unused, live, released) of every id of one kind: one byte per dense id. */
class IdStates {
  #dense = new Uint8Array(1024);
  readonly #sparse = new Map<number, number>();
  readonly #refusals: IdRefusals;

  constructor(refusals: IdRefusals) {
    this.#refusals = refusals;
  }

  /** Marks `id` live (its allocate or map event at `index`); a FormatError when it was used before. */
  open(id: number, index: number, event: unknown): void {
    if (this.get(id) !== UNUSED) throw badEvent(index, event, this.#refusals.reused);
    this.set(id, LIVE);
  }

  /** Marks `id` released (its free or unmap event at `index`); a FormatError unless it is live. */
  close(id: number, index: number, event: unknown, to = RELEASED): void {
    const state = this.get(id);
    if (state === UNUSED) throw badEvent(index, event, this.#refusals.unknown);
    if (state !== LIVE) throw badEvent(index, event, this.#refusals.twice);
    this.set(id, to);
  }

  /** Marks quarantined `id` given back (its "r" event at `index`); a FormatError unless it is quarantined. */
  giveBack(id: number, index: number, event: unknown): void {
    if (this.get(id) !== QUARANTINED) throw badEvent(index, event, "this id is not quarantined");
    this.set(id, RELEASED);
  }

  get(id: number): number {
    if (id >= DENSE_IDS) return this.#sparse.get(id) ?? UNUSED;
    return id < this.#dense.length ? (this.#dense[id] as number) : UNUSED;
  }

  /** Makes room for ids below `count` at once (a hint: a replay of a known length grows no array). */
  reserve(count: number): void {
    // At least doubled (a stream reserves per batch: growing by a batch each time would copy O(n²)), and
    // never past the dense range (at its end a reservation must cost nothing).
    if (Math.min(count, DENSE_IDS) > this.#dense.length) {
      const grown = new Uint8Array(Math.min(Math.max(count, 2 * this.#dense.length), DENSE_IDS));
      grown.set(this.#dense);
      this.#dense = grown;
    }
  }

  set(id: number, state: number): void {
    if (id >= DENSE_IDS) {
      this.#sparse.set(id, state);
      return;
    }
    if (id >= this.#dense.length) {
      let length = this.#dense.length;
      while (length <= id) length *= 2;
      const grown = new Uint8Array(Math.min(length, DENSE_IDS));
      grown.set(this.#dense);
      this.#dense = grown;
    }
    this.#dense[id] = state;
  }
}

/**
 * The one check of a trace's events, shared by {@link replayTrace}, `replayTraceStream` and the `replay`
 * program: the shape of each event, and each id's history (an id is allocated or mapped once, freed or
 * released once, and only after it was allocated or mapped). Memory: one byte per id (dense ids).
 */
export class TraceValidator {
  readonly #allocations = new IdStates({
    reused: "this id was already allocated",
    unknown: "free of an id never allocated",
    twice: "this id was already freed",
  });
  readonly #mappings = new IdStates({
    reused: "this mapping id was already used",
    unknown: "release of a mapping id never mapped",
    twice: "this mapping was already released",
  });
  #index = 0;
  #header: TraceHeader | undefined;

  /** Makes room for `count` allocation ids at once (a hint; ids beyond still work). */
  reserveAllocationIds(count: number): void {
    this.#allocations.reserve(count);
  }

  /** Events accepted so far (the header excluded). */
  get events(): number {
    return this.#index;
  }

  /** The header, once one was accepted. */
  get header(): TraceHeader | undefined {
    return this.#header;
  }

  /**
   * Checks the next item: a header object (first item only) or an event. Returns the event, or `undefined`
   * for the header.
   *
   * @throws FormatError (`ERR_NUVEC_TRACE_EVENT`) naming the event's position, with nothing recorded.
   */
  check(item: unknown): TraceEvent | undefined {
    const index = this.#index;
    // The two kinds that make up nearly every trace, checked first without the general shape test.
    if (Array.isArray(item)) {
      const tag = item[0];
      if (tag === "a" && item.length === 3) {
        const id = item[1];
        if (isByteCount(id) && isByteCount(item[2]) && this.#allocations.get(id) === UNUSED) {
          this.#allocations.set(id, LIVE);
          this.#index = index + 1;
          return item as unknown as TraceAllocate;
        }
      } else if (tag === "f" && item.length === 2) {
        const id = item[1];
        if (isByteCount(id) && this.#allocations.get(id) === LIVE) {
          this.#allocations.set(id, RELEASED);
          this.#index = index + 1;
          return item as unknown as TraceFree;
        }
      }
    }
    // Everything else, and every refusal (with its reason), on the general path.
    if (!Array.isArray(item)) {
      if (index === 0 && this.#header === undefined && typeof item === "object" && item !== null) {
        this.#header = item as TraceHeader;
        return undefined;
      }
      throw badEvent(index, item, "an event is an array; only the first item may be a header object");
    }
    if (!isTraceEvent(item)) {
      const tag = item[0];
      if (typeof tag !== "string" || !"afmulcpqr".includes(tag) || tag.length !== 1)
        throw badEvent(index, item, 'the event tag is none of "a", "f", "m", "u", "l", "c", "p", "q", "r"');
      if ("afmuqr".includes(tag) && !isByteCount(item[1]))
        throw badEvent(index, item, "the id is not a non-negative integer");
      if (tag === "l" && item[1] !== "memory" && item[1] !== "cache" && item[1] !== "wired")
        throw badEvent(index, item, 'the limit is not "memory", "cache" or "wired"');
      throw badEvent(index, item, "wrong arity, or a size that is not a non-negative integer");
    }
    // An id's history: "a" and "f" of allocations, "m" and "u" of mappings (a trace's two kinds of id).
    const tag = item[0];
    if (tag === "a" || tag === "m")
      (tag === "a" ? this.#allocations : this.#mappings).open(item[1], index, item);
    else if (tag === "f" || tag === "u")
      (tag === "f" ? this.#allocations : this.#mappings).close(item[1], index, item);
    else if (tag === "q") this.#allocations.close(item[1], index, item, QUARANTINED);
    else if (tag === "r") this.#allocations.giveBack(item[1], index, item);
    this.#index = index + 1;
    return item;
  }
}

/**
 * A replay in progress, fed one item at a time (for traces read as a stream); {@link replayTrace} is this
 * over an iterable. Memory: the validator's byte per id and the live allocations and mappings.
 */
export class TraceReplay {
  readonly #validator = new TraceValidator();
  readonly #allocator: CachingAllocator<number>;
  readonly #skipRefused: boolean;
  readonly #onEvent: ReplayOptions["onEvent"];
  // Live allocations (`null`: refused, its free is ignored) in slots reused as they free up, so the array
  // stays as small as what is live at once; a dense id's slot in a typed array (slot + 1; 0: none), a
  // Map for the rare id beyond. Live mappings by id.
  readonly #live: (Allocation<number> | null)[] = [];
  readonly #freeSlots: number[] = [];
  #slotOfId = new Int32Array(1024);
  readonly #sparseLive = new Map<number, Allocation<number> | null>();
  readonly #mappings = new Map<number, Mapping>();
  // Quarantined allocations ("q") by id: the bytes their "r" event gives back.
  readonly #quarantined = new Map<number, number>();
  #elapsed = 0;

  /** Opens the replay's allocator with `options` (see {@link ReplayOptions}). */
  constructor(options: ReplayOptions = {}) {
    const workingSet = options.workingSet ?? DEFAULT_WORKING_SET;
    const facts = {
      workingSet,
      memorySize: options.memorySize ?? 2 * workingSet,
      maxBufferLength: options.maxBufferLength ?? Number.MAX_SAFE_INTEGER,
      resourceLimit: options.resourceLimit ?? 499_000,
      pageSize: options.pageSize ?? PAGE,
    };
    const source =
      options.mapGranularity === undefined
        ? new CountingBufferSource(facts)
        : new CountingMappingSource({ ...facts, mapGranularity: options.mapGranularity });
    this.#allocator = new CachingAllocator(source, {
      policy: options.policy ?? DEFAULT_POLICY,
      reserveRatio: options.reserveRatio,
      boundedRelease: options.boundedRelease,
      ...(options.segments === undefined ? {} : { segments: options.segments }),
    });
    if (options.memoryLimit !== undefined) this.#allocator.setMemoryLimit(options.memoryLimit);
    if (options.cacheLimit !== undefined) this.#allocator.setCacheLimit(options.cacheLimit);
    this.#skipRefused = options.outOfMemory === "skip";
    this.#onEvent = options.onEvent;
  }

  /** Applies the next item (the header, first, or an event). @throws FormatError; the allocator's errors. */
  apply(item: unknown): void {
    const index = this.#validator.events;
    const event = this.#validator.check(item);
    if (event === undefined) return;
    const allocator = this.#allocator;
    switch (event[0]) {
      case "a": {
        let allocation: Allocation<number> | null;
        try {
          allocation = allocator.malloc(event[2]);
        } catch (error) {
          if (!(this.#skipRefused && error instanceof OutOfMemoryError)) throw error;
          allocation = null;
        }
        const id = event[1];
        if (id < INDEXED_IDS) {
          let slot = this.#freeSlots.pop();
          if (slot === undefined) {
            slot = this.#live.length;
            this.#live.push(allocation);
          } else this.#live[slot] = allocation;
          if (id >= this.#slotOfId.length) this.#growSlotIndex(id);
          this.#slotOfId[id] = slot + 1;
        } else this.#sparseLive.set(id, allocation);
        break;
      }
      case "f":
      case "q": {
        const id = event[1];
        let allocation: Allocation<number> | null | undefined;
        if (id < INDEXED_IDS) {
          // The validator let through only a live id: it has a slot.
          const slot = this.#slotOfId[id]! - 1;
          this.#slotOfId[id] = 0;
          allocation = this.#live[slot];
          this.#live[slot] = null;
          this.#freeSlots.push(slot);
        } else {
          allocation = this.#sparseLive.get(id);
          this.#sparseLive.delete(id);
        }
        if (allocation && event[0] === "f") allocator.free(allocation);
        else if (allocation) {
          // Freed with a view moved away: never cached, its bytes quarantined until the "r" event.
          allocator.freeWithoutCaching(allocation);
          allocator.addQuarantined(allocation.allocatedLength);
          this.#quarantined.set(id, allocation.allocatedLength);
        }
        break;
      }
      case "r": {
        const bytes = this.#quarantined.get(event[1]);
        this.#quarantined.delete(event[1]);
        // A refused allocation ("skip") was never quarantined.
        if (bytes !== undefined) allocator.removeQuarantined(bytes);
        break;
      }
      case "m":
        this.#mappings.set(event[1], allocator.addMapping(event[2]));
        break;
      case "u": {
        const mapping = this.#mappings.get(event[1]);
        if (mapping !== undefined) allocator.removeMapping(mapping);
        this.#mappings.delete(event[1]);
        break;
      }
      case "l":
        if (event[1] === "memory") allocator.setMemoryLimit(event[2]);
        else if (event[1] === "cache") allocator.setCacheLimit(event[2]);
        // A wired limit changes residency only, which a pure replay does not have.
        break;
      case "c":
        allocator.clearCache();
        break;
      case "p":
        allocator.resetPeak();
        break;
    }
    this.#onEvent?.(event, index, allocator);
  }

  #reserveSlotIndex(count: number): void {
    if (Math.min(count, INDEXED_IDS) > this.#slotOfId.length) {
      const grown = new Int32Array(Math.min(Math.max(count, 2 * this.#slotOfId.length), INDEXED_IDS));
      grown.set(this.#slotOfId);
      this.#slotOfId = grown;
    }
  }

  #growSlotIndex(id: number): void {
    let length = this.#slotOfId.length;
    while (length <= id) length *= 2;
    const grown = new Int32Array(Math.min(length, INDEXED_IDS));
    grown.set(this.#slotOfId);
    this.#slotOfId = grown;
  }

  /** Applies items in order, timing the loop (the result's `nsPerEvent` counts only time spent here). */
  applyAll(items: Iterable<unknown>): void {
    const start = now();
    try {
      if (Array.isArray(items)) {
        // A trace has at most one allocation id per item: size the id tables once, not by doubling.
        this.#validator.reserveAllocationIds(this.#validator.events + items.length);
        this.#reserveSlotIndex(this.#validator.events + items.length);
        for (let index = 0; index < items.length; index++) this.apply(items[index]);
      } else {
        for (const item of items) this.apply(item);
      }
    } finally {
      this.#elapsed += now() - start;
    }
  }

  /** The figures so far. */
  result(): ReplayResult {
    const events = this.#validator.events;
    return {
      header: this.#validator.header,
      stats: this.#allocator.memoryStats(),
      counters: this.#allocator.counters(),
      events,
      nsPerEvent: events === 0 ? 0 : (this.#elapsed * 1e6) / events,
    };
  }
}

/**
 * The replay options that run a recorded trace on the allocator that recorded it: the policy, its settings,
 * the device's facts and the limits of the header's `allocator` (what a Device writes); `{}` for a header
 * without one (the shared traces). Anything in `overrides` wins (e.g. another `policy` to compare).
 */
export function replayOptionsFromHeader(
  header: TraceHeader | undefined,
  overrides: ReplayOptions = {},
): ReplayOptions {
  const setup = header?.allocator as TraceAllocatorSetup | undefined;
  if (setup === undefined || setup === null || typeof setup !== "object") return { ...overrides };
  const options: ReplayOptions = {
    workingSet: setup.workingSet,
    memorySize: setup.memorySize,
    maxBufferLength: setup.maxBufferLength,
    resourceLimit: setup.resourceLimit,
    pageSize: setup.pageSize,
    ...(setup.mapGranularity === undefined ? {} : { mapGranularity: setup.mapGranularity }),
    memoryLimit: setup.memoryLimit,
    cacheLimit: setup.cacheLimit,
    policy: setup.policy,
    reserveRatio: setup.reserveRatio,
    boundedRelease: setup.boundedRelease,
    ...(setup.segments === undefined ? {} : { segments: setup.segments as Partial<SegmentOptions> }),
  };
  return { ...options, ...overrides };
}

/**
 * Replays a trace (`["a", id, bytes]` and `["f", id]` events, and the kinds a Device records, optionally after
 * a header object) against a {@link CachingAllocator} over a {@link CountingBufferSource}, and returns the
 * final statistics and counters. Pure: runs anywhere. Events are checked by {@link TraceValidator}.
 *
 * @throws FormatError for an impossible event (unknown id, id reused, bad shape); the allocator's errors.
 */
export function replayTrace(
  events: Iterable<TraceEvent | TraceHeader>,
  options: ReplayOptions = {},
): ReplayResult {
  const replay = new TraceReplay(options);
  replay.applyAll(events);
  return replay.result();
}
