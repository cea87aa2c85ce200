// What the allocator allocates from: the interface a backend (or a replay's counter) implements, and the
// test of which of its errors are refusals to allocate (worth the retry after the cache is released).

/**
 * Where system buffers come from (Metal, host memory, or nothing at all for a replay), with the device facts
 * the policy needs.
 */
export interface BufferSource<B> {
  /** Metal's `recommendedMaxWorkingSetSize` (`W`): the GC limit and default memory limit derive from it. */
  readonly recommendedMaxWorkingSetSize: number;
  /** The machine's memory size (`M`, `hw.memsize`). */
  readonly memorySize: number;
  /** The largest buffer the device can make; larger requests are refused. */
  readonly maxBufferLength: number;
  /** The most live resources (buffers, cached or not, and mapped files) the device allows. */
  readonly resourceLimit: number;
  /** The system's page size: mapped files are charged whole pages of it. */
  readonly pageSize: number;
  /** A new system buffer of exactly `bytes` (always a size class); throws on failure. */
  acquire(bytes: number): B;
  /** Gives a buffer back to the system. */
  release(buffer: B): void;
  /**
   * A buffer over `length` bytes of `segment` from `offset` (whole blocks of 512 bytes), sharing its memory:
   * what the `"segments"` policy hands out. Without it that policy is refused.
   */
  range?(segment: B, offset: number, length: number): B;
  /** Gives a range back; its segment's memory stays. Default: nothing to do. */
  releaseRange?(range: B): void;
  /**
   * The unit of `map`/`unmap` offsets and lengths. With `reserve`, `map` and `unmap` (a `MappingSource`),
   * the segments policy's large pool is one expandable segment.
   */
  readonly mapGranularity?: number;
  /** `capacity` bytes of address space with no memory behind them: a buffer ranges can be made of. */
  reserve?(capacity: number): B;
  /** Backs `[offset, offset + length)` of a reserved buffer with memory (one system allocation). */
  map?(space: B, offset: number, length: number): void;
  /** Gives back the memory of exactly one earlier `map` call's range. */
  unmap?(space: B, offset: number, length: number): void;
  /**
   * Whether an error thrown by `acquire` is a refusal to allocate (worth a retry after the cache is
   * released); default {@link isAllocationFailure}. Any other error propagates from `malloc` unchanged.
   */
  isAllocationFailure?(error: unknown): boolean;
}

/** The `code` of a buffer source's refusal to allocate (an `OutOfMemoryError` from a native backend). */
export const ALLOCATION_FAILED_CODE = "ERR_NUVEC_ALLOCATION_FAILED";

/**
 * The default test of an allocation failure: an error whose `code` is {@link ALLOCATION_FAILED_CODE} (what
 * nuvec's backends throw when the system refuses memory), or a `RangeError` (what JavaScript throws when an
 * `ArrayBuffer` cannot be allocated).
 */
export function isAllocationFailure(error: unknown): boolean {
  if (error instanceof RangeError) return true;
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { code?: unknown }).code === ALLOCATION_FAILED_CODE
  );
}
