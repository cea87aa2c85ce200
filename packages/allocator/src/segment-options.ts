// The segments policy's sizes: what each one means, the defaults (fixed segments, and the expandable large
// pool over a source that maps memory), and the check that fills them in.
import { ArgumentError, optionsSchema, type Rule, rules } from "@nuvec/stats";

const { boolean, byteCount, optional } = rules;

const KIB = 1024;
const MIB = 1024 * KIB;

/** The segments policy's sizes (see {@link SEGMENT_DEFAULTS}); every field is a byte count. */
export interface SegmentOptions {
  /** Every block is a multiple of this (a power of two). */
  readonly blockRounding: number;
  /** Requests up to this go to the small pool. */
  readonly smallRequest: number;
  /** The small pool's segments. */
  readonly smallSegment: number;
  /** Large requests below half of this share a segment of this size. */
  readonly largeSegment: number;
  /** Larger requests get a segment of their own size rounded up to this (the driver's granularity). */
  readonly segmentRounding: number;
  /**
   * Free blocks at least this large are never split for a smaller request (they stay whole for requests of
   * their kind); `0`: no limit.
   */
  readonly maxSplitSize: number;
  /**
   * What a miss does with the idle segments of its pool (whole free segments, none with a block large
   * enough) when the new segment would raise the peak of reserved memory: `3` gives back the least recently
   * idle ones until they make up the new segment's size (the default: at the peak, memory is not held twice,
   * and a second pass over a workload finds most of its segments still there); `2` gives them all back;
   * `1` gives them all back on every miss; `0` never (they stay cached, as PyTorch's default).
   */
  readonly releaseIdleOnMiss: number;
  /**
   * Whether the large pool is one expandable segment (address space reserved once, pages mapped as blocks
   * need them: {@link MappedPages}) when the source can map; `false`: a segment per miss, as elsewhere.
   */
  readonly expandable: boolean;
  /**
   * An expandable segment that grows past everything it ever mapped maps at least this many bytes at once
   * (a multiple of the granularity; `0`: exactly the pages the block needs): fewer system allocations while
   * a workload grows, at most this much more reserved.
   */
  readonly mapAhead: number;
}

/**
 * The segments policy's defaults: 512-byte blocks; requests up to 1 MiB from 4 MiB segments, larger ones
 * below 20 MiB from shared 40 MiB segments, anything larger from a segment of its own rounded to 4 MiB (twice
 * a CUDA driver's 2 MiB granularity); no split limit; idle segments given back on a miss that would raise
 * the peak of reserved memory. Chosen on the shared traces against PyTorch's caching allocator (the
 * cuda-native README): PyTorch's own sizes (2 MiB, 20 MiB, 2 MiB) cost 1.5–2× the system allocations for
 * at most 3% less reserved memory.
 */
export const SEGMENT_DEFAULTS: SegmentOptions = Object.freeze({
  blockRounding: 512,
  smallRequest: 1 * MIB,
  smallSegment: 4 * MIB,
  largeSegment: 40 * MIB,
  segmentRounding: 4 * MIB,
  maxSplitSize: 0,
  releaseIdleOnMiss: 3,
  expandable: true,
  mapAhead: 0,
});

function isPowerOfTwo(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0 && (value & (value - 1)) === 0 && value <= 2 ** 30;
}

/**
 * The defaults over a source that maps memory into reserved address space (CUDA's): the large pool is one
 * expandable segment that maps 16 MiB at a time as it grows, requests up to 512 KiB go to the small pool,
 * and a miss unmaps nothing (nothing in the large pool is ever idle whole). Chosen on the shared traces
 * against PyTorch's expandable segments (the cuda-native README): reserved within 0.3 % of the live peak
 * rounded to 2 MiB plus holes, with fewer system allocations than PyTorch's.
 */
export const EXPANDABLE_SEGMENT_DEFAULTS: SegmentOptions = Object.freeze({
  ...SEGMENT_DEFAULTS,
  smallRequest: 512 * KIB,
  releaseIdleOnMiss: 0,
  mapAhead: 16 * MIB,
});

/** The options of `segments`, declared once: a byte count each but `expandable`; no other key. */
const SEGMENT_FIELDS = {
  blockRounding: optional(byteCount()),
  smallRequest: optional(byteCount()),
  smallSegment: optional(byteCount()),
  largeSegment: optional(byteCount()),
  segmentRounding: optional(byteCount()),
  maxSplitSize: optional(byteCount()),
  releaseIdleOnMiss: optional(byteCount()),
  expandable: optional(boolean),
  mapAhead: optional(byteCount()),
} as const;

/** `segments` as a nested option: every key known, each read once (its getter run once). */
const SEGMENT_SCHEMA = optionsSchema("checkSegmentOptions()", SEGMENT_FIELDS);

/**
 * The rule of the `segments` option of an entry point (`Device.open()`, `new CachingAllocator()`): an object
 * of the known sizes only (an unknown or misspelt key is refused, naming it and the entry point), each read
 * once and checked against its rules; returns a plain object of what was given.
 */
export const SEGMENT_OPTIONS_RULE: Rule<Partial<SegmentOptions> | undefined> & { readonly optional: true } = {
  expected: "an object of byte counts",
  optional: true,
  check(value, name, where) {
    if (value === undefined) return undefined;
    const given = SEGMENT_SCHEMA.check(value, name, where) as Partial<SegmentOptions>;
    checkRules({ ...SEGMENT_DEFAULTS, ...given }, where);
    return given;
  },
};

/**
 * The options checked against their rules, defaults filled in: {@link EXPANDABLE_SEGMENT_DEFAULTS} when the
 * source maps memory (`mapping`) and `expandable` is not turned off, else {@link SEGMENT_DEFAULTS}. Every
 * key must be one of {@link SegmentOptions}'s; each is read once.
 */
export function checkSegmentOptions(
  options: Partial<SegmentOptions> | undefined,
  mapping = false,
): SegmentOptions {
  if (options === undefined) return mapping ? EXPANDABLE_SEGMENT_DEFAULTS : SEGMENT_DEFAULTS;
  const given = SEGMENT_SCHEMA.check(options, "segments", "checkSegmentOptions()") as Partial<SegmentOptions>;
  const defaults = mapping && given.expandable !== false ? EXPANDABLE_SEGMENT_DEFAULTS : SEGMENT_DEFAULTS;
  const merged = { ...defaults, ...given };
  checkRules(merged, "checkSegmentOptions()");
  return Object.freeze(merged);
}

/** The rules between the sizes, on a whole set of them; messages begin with `where`. */
function checkRules(merged: SegmentOptions, where: string): void {
  const refuse = (name: keyof SegmentOptions, rule: string): never => {
    throw new ArgumentError(`segments.${name}`, `${where}: segments.${name} ${rule}, got ${merged[name]}`);
  };
  for (const name of ["blockRounding", "segmentRounding"] as const) {
    if (!isPowerOfTwo(merged[name])) refuse(name, "must be a power of two up to 1 GiB");
  }
  for (const name of ["smallRequest", "smallSegment", "largeSegment"] as const) {
    if (merged[name] === 0 || merged[name] % merged.blockRounding !== 0) {
      refuse(name, `must be a positive multiple of blockRounding (${merged.blockRounding})`);
    }
  }
  if (merged.releaseIdleOnMiss > 3) refuse("releaseIdleOnMiss", "must be 0, 1, 2 or 3");
  if (merged.smallSegment < merged.smallRequest) {
    refuse("smallSegment", `must hold a small request (${merged.smallRequest})`);
  }
}

/**
 * `options` (checked, defaults filled in) unless a segment size given in `given` is larger than the source's
 * largest buffer (`maxBufferLength`): a segment is one buffer, so such a size is refused, naming it, rather
 * than cut down to a buffer of `maxBufferLength` for every miss. The defaults are cut down (a small device).
 */
export function segmentsWithin(
  options: SegmentOptions,
  given: Partial<SegmentOptions> | undefined,
  maxBufferLength: number,
): SegmentOptions {
  for (const name of ["smallSegment", "largeSegment"] as const) {
    const size = given?.[name];
    if (size !== undefined && size > maxBufferLength) {
      throw new ArgumentError(
        `segments.${name}`,
        `segments.${name} (${size}) must fit in one buffer of the source (maxBufferLength ${maxBufferLength})`,
      );
    }
  }
  return options;
}
