import { type MemoryStats, PAGE } from "@nuvec/stats";
import {
  type Allocation,
  type AllocatorCounters,
  type AllocatorPolicy,
  type BoundedRelease,
  type BufferSource,
  CachingAllocator,
  type Mapping,
} from "./allocator.js";
import { OutOfMemoryError, TraceError } from "./errors.js";

/** An allocation event of a trace: allocate `bytes` (as requested) under the dense id `id`. */
export type TraceAllocate = readonly ["a", number, number];
/** A free event of a trace: free allocation `id`. */
export type TraceFree = readonly ["f", number];
/** A file of `length` bytes mapped under the dense id `id` (recorded by a Device; beyond the shared traces). */
export type TraceMap = readonly ["m", number, number];
/** Mapping `id` released. */
export type TraceUnmap = readonly ["u", number];
/** A limit set: the memory limit, the cache limit or the wired limit (a pure replay has no wired memory). */
export type TraceLimit = readonly ["l", "memory" | "cache" | "wired", number];
/** The cache cleared. */
export type TraceClearCache = readonly ["c"];
/** The peak reset. */
export type TraceResetPeak = readonly ["p"];
/**
 * One event of a trace: the shared traces have allocations and frees; a trace recorded by a Device also
 * has mappings, limit changes, cache clears and peak resets, which a replay applies in order.
 */
export type TraceEvent =
  | TraceAllocate
  | TraceFree
  | TraceMap
  | TraceUnmap
  | TraceLimit
  | TraceClearCache
  | TraceResetPeak;

/** The header object on a trace's first line (every field optional to a reader). */
export interface TraceHeader {
  name?: string;
  workload?: string;
  source?: string;
  events?: number;
  allocations?: number;
  live_at_end?: number;
  peak_live_bytes?: number;
  [field: string]: unknown;
}

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
  /** The cache policy; default `"mlx"`. */
  policy?: AllocatorPolicy;
  /** The bounded policy's ratio; default 1.3. */
  reserveRatio?: number;
  /** Which buffer the bounded policy releases first; default `"least-recent"`. */
  boundedRelease?: BoundedRelease;
  /** Default `Number.MAX_SAFE_INTEGER`: the traces come from another device. */
  maxBufferLength?: number;
  /** Default 499000, Metal's. */
  resourceLimit?: number;
  /** Default 16 KiB. */
  pageSize?: number;
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
  /** Wall-clock nanoseconds per event of the replay loop (reading and parsing excluded). */
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
}

const DEFAULT_WORKING_SET = 8 * 1024 ** 3;
const FREED = Symbol("freed");

function now(): number {
  const clock = (globalThis as { performance?: { now(): number } }).performance;
  return clock === undefined ? Date.now() : clock.now();
}

function badEvent(index: number, event: unknown, why: string): TraceError {
  let text: string;
  try {
    text = JSON.stringify(event) ?? String(event);
  } catch {
    text = String(event);
  }
  return new TraceError("ERR_NUVEC_TRACE_EVENT", `trace event ${index} (${text.slice(0, 80)}): ${why}`);
}

/** Applies an event of the kinds a Device records beyond allocations and frees. */
function applyDeviceEvent(
  allocator: CachingAllocator<number>,
  mappings: (Mapping | typeof FREED | undefined)[],
  event: TraceEvent,
  index: number,
): void {
  switch (event[0]) {
    case "m": {
      const id = event[1];
      if (!Number.isSafeInteger(id) || id < 0)
        throw badEvent(index, event, "the id is not a non-negative integer");
      if (mappings[id] !== undefined) throw badEvent(index, event, "this mapping id was already used");
      mappings[id] = allocator.addMapping(event[2]);
      return;
    }
    case "u": {
      const mapping = mappings[event[1]];
      if (mapping === undefined) throw badEvent(index, event, "release of a mapping id never mapped");
      if (mapping === FREED) throw badEvent(index, event, "this mapping was already released");
      allocator.removeMapping(mapping);
      mappings[event[1]] = FREED;
      return;
    }
    case "l":
      if (event[1] === "memory") allocator.setMemoryLimit(event[2]);
      else if (event[1] === "cache") allocator.setCacheLimit(event[2]);
      else if (event[1] !== "wired")
        throw badEvent(index, event, 'the limit is not "memory", "cache" or "wired"');
      // A wired limit changes residency only, which a pure replay does not have.
      return;
    case "c":
      allocator.clearCache();
      return;
    case "p":
      allocator.resetPeak();
      return;
    default:
      throw badEvent(index, event, 'the event tag is none of "a", "f", "m", "u", "l", "c", "p"');
  }
}

/**
 * Replays a trace (`["a", id, bytes]` and `["f", id]` events, and the kinds a Device records, optionally after a header object) against a
 * {@link CachingAllocator} over a {@link CountingBufferSource}, and returns the final statistics and
 * counters. Pure: runs anywhere.
 *
 * @throws TraceError for an impossible event (unknown id, id reused, bad shape); the allocator's errors.
 */
export function replayTrace(
  events: Iterable<TraceEvent | TraceHeader>,
  options: ReplayOptions = {},
): ReplayResult {
  const workingSet = options.workingSet ?? DEFAULT_WORKING_SET;
  const source = new CountingBufferSource({
    workingSet,
    memorySize: options.memorySize ?? 2 * workingSet,
    maxBufferLength: options.maxBufferLength ?? Number.MAX_SAFE_INTEGER,
    resourceLimit: options.resourceLimit ?? 499_000,
    pageSize: options.pageSize ?? PAGE,
  });
  const allocator = new CachingAllocator(source, {
    policy: options.policy ?? "mlx",
    reserveRatio: options.reserveRatio,
    boundedRelease: options.boundedRelease,
  });
  if (options.memoryLimit !== undefined) allocator.setMemoryLimit(options.memoryLimit);
  if (options.cacheLimit !== undefined) allocator.setCacheLimit(options.cacheLimit);
  const skipRefused = options.outOfMemory === "skip";
  const onEvent = options.onEvent;

  // Per id: its allocation while live, `null` when refused (its free is ignored), FREED once freed.
  const live: (Allocation<number> | null | typeof FREED | undefined)[] = [];
  const mappings: (Mapping | typeof FREED | undefined)[] = [];
  let header: TraceHeader | undefined;
  let index = 0;
  const start = now();
  for (const item of events) {
    if (!Array.isArray(item)) {
      if (index === 0 && header === undefined && typeof item === "object" && item !== null) {
        header = item as TraceHeader;
        continue;
      }
      throw badEvent(index, item, "an event is an array; only the first item may be a header object");
    }
    const event = item as TraceEvent;
    const tag = event[0];
    if (tag !== "a" && tag !== "f") {
      applyDeviceEvent(allocator, mappings, event, index);
      index++;
      onEvent?.(event, index - 1, allocator);
      continue;
    }
    const id = event[1];
    if (!Number.isSafeInteger(id) || id < 0)
      throw badEvent(index, event, "the id is not a non-negative integer");
    if (event[0] === "a") {
      if (live[id] !== undefined) throw badEvent(index, event, "this id was already allocated");
      try {
        live[id] = allocator.malloc(event[2]);
      } catch (error) {
        if (!(skipRefused && error instanceof OutOfMemoryError)) throw error;
        live[id] = null;
      }
    } else if (event[0] === "f") {
      const allocation = live[id];
      if (allocation === undefined) throw badEvent(index, event, "free of an id never allocated");
      if (allocation === FREED) throw badEvent(index, event, "this id was already freed");
      if (allocation !== null) allocator.free(allocation);
      live[id] = FREED;
    }
    index++;
    onEvent?.(event, index - 1, allocator);
  }
  const elapsed = now() - start;
  return {
    header,
    stats: allocator.memoryStats(),
    counters: allocator.counters(),
    events: index,
    nsPerEvent: index === 0 ? 0 : (elapsed * 1e6) / index,
  };
}
