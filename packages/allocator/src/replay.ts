// The replay driver: a trace's events, checked by the TraceValidator, applied to a CachingAllocator over a
// CountingBufferSource. Memory is bounded by what the trace keeps live, not by its length: the validator's,
// and the live allocations, mappings and quarantined buffers here, by id.
import { ArgumentError, type MemoryStats, OutOfMemoryError, PAGE } from "@nuvec/stats";
import type { Allocation, Mapping } from "./allocation.js";
import { CachingAllocator, sizeClassEngineOf } from "./allocator.js";
import type { CachedBuffer } from "./cached-buffer.js";
import type { AllocatorCounters } from "./counters.js";
import { CountingBufferSource, CountingMappingSource } from "./counting-source.js";
import { type AllocatorOptions, DEFAULT_POLICY } from "./options.js";
import { type Live, replayPacked } from "./packed-replay.js";
import { PackedTrace, packedPartsOf } from "./packed-trace.js";
import type { SegmentOptions } from "./segment-options.js";
import type { SizeClassAllocator } from "./size-classes.js";
import type { TraceAllocatorSetup, TraceEvent, TraceHeader } from "./trace-format.js";
import { TraceIdMap } from "./trace-ids.js";
import { TraceValidator } from "./trace-validator.js";

/**
 * The device a replay pretends to run on, the settings applied right after opening it, and the allocator's
 * policy options.
 */
export interface ReplayOptions
  extends Pick<AllocatorOptions<never>, "policy" | "reserveRatio" | "boundedRelease" | "segments"> {
  /** Recommended max working set (`W`); default 8 GiB. */
  workingSet?: number;
  /** Memory size (`M`); default twice the working set. */
  memorySize?: number;
  /** Set right after opening (so the cache limit keeps its default), as `setMemoryLimit`. */
  memoryLimit?: number;
  /** Set right after opening, as `setCacheLimit`. */
  cacheLimit?: number;
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

const DEFAULT_WORKING_SET = 8 * 1024 ** 3;
// Ids below this have their live allocation's slot in a typed array (4 bytes per id, at most 4 MiB); a
// longer trace's later ids go through a TraceIdMap (slower, and bounded by what is live, not by the trace).
const INDEXED_IDS = 1 << 20;
/** A fresh replay's slot index: empty, shared, never written. */
const NO_SLOTS = new Int32Array(0);

// Set by TraceReplay's static block: a packed trace replayed on a fresh replay, and the replay's steps that
// the packed loop calls (a quarantine, any event but "a", "f" and "q").
let applyPacked: (replay: TraceReplay, trace: PackedTrace) => void;
let quarantineIn: (replay: TraceReplay, id: number, allocation: Live) => void;
let applyOtherIn: (replay: TraceReplay, event: TraceEvent) => void;

function now(): number {
  const clock = (globalThis as { performance?: { now(): number } }).performance;
  return clock === undefined ? Date.now() : clock.now();
}

/**
 * A replay in progress, fed one item at a time (for traces read as a stream); {@link replayTrace} is this
 * over an iterable. Memory: what the validator keeps and the live allocations and mappings, bounded by what
 * the trace keeps live at once, whatever its length.
 */
export class TraceReplay {
  // Made at the first item fed (a packed trace was checked when packed and needs none), as the maps by id
  // below are at their first entry: a replay of a short packed trace makes only what it uses.
  #checker: TraceValidator | undefined;
  readonly #allocator: CachingAllocator<number>;
  readonly #skipRefused: boolean;
  readonly #onEvent: ReplayOptions["onEvent"];
  // Under `mlx` and `bounded`: the size-class allocator, whose records the replay keeps instead of an
  // Allocation per malloc (nothing allocated per event once the cache is warm); `undefined` under `segments`.
  readonly #records: SizeClassAllocator<number> | undefined;
  // Live allocations (`null`: refused or 0 bytes, its free is ignored) in slots reused as they free up, so the
  // array stays as small as what is live at once; a dense id's slot in a typed array (slot + 1; 0: none), a
  // TraceIdMap for the ids beyond. Each is the allocator's record under `mlx` and `bounded`, the Allocation
  // under `segments`. Live mappings by id.
  readonly #live: (Live | null)[] = [];
  readonly #freeSlots: number[] = [];
  // Empty until the first id comes (a packed trace's replay has slots already and makes none).
  #slotOfId = NO_SLOTS;
  #sparseLive: TraceIdMap<Live | null> | undefined;
  #mappings: TraceIdMap<Mapping> | undefined;
  // Quarantined allocations ("q") by id: what their "r" event ends the quarantine of.
  #quarantined: TraceIdMap<Allocation<number>> | undefined;
  #elapsed = 0;
  // A packed trace's events and header (the validator saw none of them).
  #packedEvents = 0;
  #packedHeader: TraceHeader | undefined;

  static {
    applyPacked = (replay, trace) => replay.#applyPacked(trace);
    quarantineIn = (replay, id, allocation) => replay.#quarantine(id, allocation);
    applyOtherIn = (replay, event) => replay.#applyOther(event);
  }

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
    // Only the options given: the allocator checks each option passed, and a replay opens one per run.
    const allocatorOptions: AllocatorOptions<number> = { policy: options.policy ?? DEFAULT_POLICY };
    if (options.reserveRatio !== undefined) allocatorOptions.reserveRatio = options.reserveRatio;
    if (options.boundedRelease !== undefined) allocatorOptions.boundedRelease = options.boundedRelease;
    if (options.segments !== undefined) allocatorOptions.segments = options.segments;
    this.#allocator = new CachingAllocator(source, allocatorOptions);
    if (options.memoryLimit !== undefined) this.#allocator.setMemoryLimit(options.memoryLimit);
    if (options.cacheLimit !== undefined) this.#allocator.setCacheLimit(options.cacheLimit);
    this.#records = sizeClassEngineOf(this.#allocator);
    this.#skipRefused = options.outOfMemory === "skip";
    this.#onEvent = options.onEvent;
  }

  /** Applies the next item (the header, first, or an event). @throws FormatError; the allocator's errors. */
  apply(item: unknown): void {
    const validator = this.#validator();
    const index = validator.events;
    const event = validator.check(item);
    if (event === undefined) return;
    this.#applyEvent(event);
    this.#onEvent?.(event, index, this.#allocator);
  }

  /** An event the validator accepted: an allocation and a free (nearly every event) first, by their tags. */
  #applyEvent(event: TraceEvent): void {
    const tag = event[0];
    if (tag === "a") this.#allocate(event[1], event[2]);
    else if (tag === "f") this.#free(event[1], true);
    else this.#applyOther(event);
  }

  #allocate(id: number, bytes: number): void {
    let allocation: Live | null;
    try {
      // The validator checked the byte count.
      const records = this.#records;
      allocation = records !== undefined ? records.acquire(bytes) : this.#allocator.malloc(bytes);
    } catch (error) {
      if (!(this.#skipRefused && error instanceof OutOfMemoryError)) throw error;
      allocation = null;
    }
    if (id < INDEXED_IDS) {
      let slot = this.#freeSlots.pop();
      if (slot === undefined) {
        slot = this.#live.length;
        this.#live.push(allocation);
      } else this.#live[slot] = allocation;
      if (id >= this.#slotOfId.length) this.#growSlotIndex(id);
      this.#slotOfId[id] = slot + 1;
    } else this.#sparseLiveMap().set(id, allocation);
  }

  /** A free (`cache`: "f") or a quarantine ("q") of a live id. */
  #free(id: number, cache: boolean): void {
    let allocation: Live | null | undefined;
    if (id < INDEXED_IDS) {
      // The validator let through only a live id: it has a slot.
      const slot = this.#slotOfId[id]! - 1;
      this.#slotOfId[id] = 0;
      allocation = this.#live[slot];
      this.#live[slot] = null;
      this.#freeSlots.push(slot);
    } else {
      allocation = this.#sparseLive?.get(id);
      this.#sparseLive?.delete(id);
    }
    if (!allocation) return;
    const records = this.#records;
    if (cache) {
      if (records !== undefined) records.recycle(allocation as CachedBuffer<number>);
      else this.#allocator.free(allocation as Allocation<number>);
      return;
    }
    this.#quarantine(id, allocation);
  }

  /**
   * Freed with a view moved away: never cached, quarantined until the "r" event. A record gets its
   * Allocation here (the quarantine's key); the replay keeps no request size, the size class stands in (a
   * quarantine counts the buffer's length).
   */
  #quarantine(id: number, allocation: Live): void {
    const records = this.#records;
    const quarantined =
      records !== undefined
        ? records.adopt(
            allocation as CachedBuffer<number>,
            (allocation as CachedBuffer<number>).liveSizeClass,
          )
        : (allocation as Allocation<number>);
    this.#allocator.quarantine(quarantined);
    if (this.#quarantined === undefined) this.#quarantined = new TraceIdMap();
    this.#quarantined.set(id, quarantined);
  }

  /** Every kind but "a" and "f". */
  #applyOther(event: TraceEvent): void {
    const allocator = this.#allocator;
    switch (event[0]) {
      case "q":
        this.#free(event[1], false);
        break;
      case "r": {
        const quarantined = this.#quarantined?.get(event[1]);
        this.#quarantined?.delete(event[1]);
        // A refused allocation ("skip") was never quarantined.
        if (quarantined !== undefined) allocator.endQuarantine(quarantined);
        break;
      }
      case "m":
        if (this.#mappings === undefined) this.#mappings = new TraceIdMap();
        this.#mappings.set(event[1], allocator.addMapping(event[2]));
        break;
      case "u": {
        const mapping = this.#mappings?.get(event[1]);
        if (mapping !== undefined) allocator.removeMapping(mapping);
        this.#mappings?.delete(event[1]);
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
  }

  #validator(): TraceValidator {
    if (this.#checker === undefined) this.#checker = new TraceValidator();
    return this.#checker;
  }

  #sparseLiveMap(): TraceIdMap<Live | null> {
    if (this.#sparseLive === undefined) this.#sparseLive = new TraceIdMap();
    return this.#sparseLive;
  }

  #reserveSlotIndex(count: number): void {
    if (Math.min(count, INDEXED_IDS) > this.#slotOfId.length) {
      const grown = new Int32Array(Math.min(Math.max(count, 2 * this.#slotOfId.length), INDEXED_IDS));
      grown.set(this.#slotOfId);
      this.#slotOfId = grown;
    }
  }

  #growSlotIndex(id: number): void {
    let length = Math.max(this.#slotOfId.length, 16);
    while (length <= id) length *= 2;
    const grown = new Int32Array(Math.min(length, INDEXED_IDS));
    grown.set(this.#slotOfId);
    this.#slotOfId = grown;
  }

  /**
   * {@link applyAll}'s loop over an array without a hook: an allocation or a free (nearly every event) checked
   * where it is read and applied; anything else, and every refusal, through {@link TraceValidator.check} and
   * `#applyEvent`. The same checks, decisions and figures as {@link apply}.
   */
  #applyArray(items: readonly unknown[]): void {
    const validator = this.#validator();
    for (let index = 0; index < items.length; index++) {
      const item = items[index];
      if (Array.isArray(item)) {
        const tag = item[0];
        if (tag === "a" && item.length === 3) {
          if (validator.acceptAllocation(item[1], item[2])) {
            this.#allocate(item[1], item[2]);
            continue;
          }
        } else if (tag === "f" && item.length === 2 && validator.acceptFree(item[1])) {
          this.#free(item[1], true);
          continue;
        }
      }
      const event = validator.check(item);
      if (event !== undefined) this.#applyEvent(event);
    }
  }

  /**
   * A whole packed trace on a fresh replay: its events were checked when it was packed, and its allocations
   * come with live slots instead of ids. The same decisions and figures as {@link applyAll} on its items.
   */
  #applyPacked(trace: PackedTrace): void {
    if (this.#onEvent !== undefined) {
      throw new ArgumentError(
        "options.onEvent",
        "replayTrace(): onEvent needs the events themselves; replay the items, not a PackedTrace",
      );
    }
    const start = now();
    try {
      replayPacked(
        packedPartsOf(trace),
        this.#records,
        this.#allocator,
        this.#skipRefused,
        this,
        quarantineIn,
        applyOtherIn,
      );
    } finally {
      this.#elapsed += now() - start;
      this.#packedEvents = trace.events;
      this.#packedHeader = trace.header;
    }
  }

  /** Applies items in order, timing the loop (the result's `nsPerEvent` counts only time spent here). */
  applyAll(items: Iterable<unknown>): void {
    const start = now();
    try {
      if (Array.isArray(items)) {
        // A trace has at most one allocation id per item: size the slot index once, not by doubling.
        this.#reserveSlotIndex(this.#validator().events + items.length);
        if (this.#onEvent === undefined) this.#applyArray(items);
        else for (let index = 0; index < items.length; index++) this.apply(items[index]);
      } else {
        for (const item of items) this.apply(item);
      }
    } finally {
      this.#elapsed += now() - start;
    }
  }

  /** The figures so far. */
  result(): ReplayResult {
    const events = (this.#checker?.events ?? 0) + this.#packedEvents;
    return {
      header: this.#checker?.header ?? this.#packedHeader,
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
 * final statistics and counters. Pure: runs anywhere. Events are checked by {@link TraceValidator}; any id a
 * trace can hold is taken. A {@link PackedTrace} ({@link packTrace}: checked once, for a trace replayed
 * many times) gives the figures of its items, faster; `onEvent` needs the items.
 *
 * @throws FormatError for an impossible event (unknown id, id reused, bad shape); the allocator's errors.
 */
export function replayTrace(
  events: Iterable<TraceEvent | TraceHeader> | PackedTrace,
  options: ReplayOptions = {},
): ReplayResult {
  const replay = new TraceReplay(options);
  if (events instanceof PackedTrace) applyPacked(replay, events);
  else replay.applyAll(events);
  return replay.result();
}
