// The loop of a packed replay (replay.ts's TraceReplay runs it on a fresh replay of a PackedTrace).
import { OutOfMemoryError } from "@nuvec/stats";
import type { Allocation } from "./allocation.js";
import type { CachingAllocator } from "./allocator.js";
import type { CachedBuffer } from "./cached-buffer.js";
import { PACKED_ALLOCATE, PACKED_FREE, PACKED_QUARANTINE, type PackedParts } from "./packed-trace.js";
import type { SizeClassAllocator } from "./size-classes.js";
import type { TraceEvent } from "./trace-format.js";

/** What a replay keeps per live allocation: the allocator's record, or its Allocation under `segments`. */
export type Live = CachedBuffer<number> | Allocation<number>;

/**
 * The loop of a packed replay, apart from the replay's bookkeeping: a function of its arguments only, with no
 * `try`/`finally` and no private fields, so the code V8 optimizes for a long trace also serves a short one
 * whole (a method whose `finally` no event ran before it was optimized deoptimized on every short replay).
 * The replay's own steps come as functions of it (`replay` their first argument): no closure per replay.
 */
export function replayPacked<R>(
  { kinds, values, slots, others, slotCount }: PackedParts,
  records: SizeClassAllocator<number> | undefined,
  allocator: CachingAllocator<number>,
  skipRefused: boolean,
  replay: R,
  quarantine: (replay: R, id: number, allocation: Live) => void,
  applyOther: (replay: R, event: TraceEvent) => void,
): void {
  // Holes until first used (a fill costs a short replay more than its events): a hole reads as undefined.
  const live: (Live | null | undefined)[] = new Array(slotCount);
  for (let index = 0; index < kinds.length; index++) {
    const kind = kinds[index];
    if (kind === PACKED_ALLOCATE) {
      const bytes = values[index] as number;
      let allocation: Live | null;
      try {
        allocation = records !== undefined ? records.acquire(bytes) : allocator.malloc(bytes);
      } catch (error) {
        if (!(skipRefused && error instanceof OutOfMemoryError)) throw error;
        allocation = null;
      }
      live[slots[index] as number] = allocation;
    } else if (kind === PACKED_FREE) {
      const slot = slots[index] as number;
      const allocation = live[slot];
      live[slot] = null;
      if (allocation === null || allocation === undefined) continue;
      if (records !== undefined) records.recycle(allocation as CachedBuffer<number>);
      else allocator.free(allocation as Allocation<number>);
    } else if (kind === PACKED_QUARANTINE) {
      const slot = slots[index] as number;
      const allocation = live[slot];
      live[slot] = null;
      if (allocation !== null && allocation !== undefined) {
        quarantine(replay, (others[values[index] as number] as TraceEvent)[1] as number, allocation);
      }
    } else applyOther(replay, others[values[index] as number] as TraceEvent);
  }
}
