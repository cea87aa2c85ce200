// One policy's replay of checked trace events: a CachingAllocator over an AddressedSource, the live
// allocations and mappings by trace id. What the allocator's own TraceReplay does, with the allocation at
// hand (its charged bytes, its address) for the view and the exports.
import {
  type Allocation,
  type AllocatorPolicy,
  CachingAllocator,
  type Mapping,
  OutOfMemoryError,
  type SegmentOptions,
  TraceIdMap,
} from "@nuvec/allocator";
import { AddressedSource, type DeviceFacts, type SourceListener } from "./addressed-source.js";

/** A policy and its settings, the limits set right after opening, and the device's facts. */
export interface PolicyRunOptions extends DeviceFacts {
  policy: AllocatorPolicy;
  reserveRatio?: number;
  boundedRelease?: "fitting" | "least-recent" | "largest";
  segments?: Partial<SegmentOptions>;
  memoryLimit?: number;
  cacheLimit?: number;
}

/** What one event did to an allocation: `charged` bytes at `address` (0 and `undefined` when refused). */
export interface Applied {
  charged: number;
  address: number | undefined;
}

/** One policy's allocator, fed checked events (a TraceValidator has passed them). */
export class PolicyRun {
  readonly policy: AllocatorPolicy;
  readonly allocator: CachingAllocator<number>;
  readonly source: AddressedSource;
  /** Allocations refused by a limit (`OutOfMemoryError`): counted, their frees ignored. */
  refused = 0;
  readonly #live = new TraceIdMap<Allocation<number>>();
  readonly #quarantined = new TraceIdMap<Allocation<number>>();
  readonly #mappings = new TraceIdMap<Mapping>();

  /** Opens the allocator; the memory limit is set first (it moves the GC limit), then the cache limit. */
  constructor(options: PolicyRunOptions, listener?: SourceListener) {
    this.policy = options.policy;
    this.source = new AddressedSource(options, listener);
    this.allocator = new CachingAllocator(this.source, {
      policy: options.policy,
      ...(options.policy === "bounded"
        ? {
            ...(options.reserveRatio === undefined ? {} : { reserveRatio: options.reserveRatio }),
            ...(options.boundedRelease === undefined ? {} : { boundedRelease: options.boundedRelease }),
          }
        : {}),
      ...(options.policy === "segments" && options.segments !== undefined
        ? { segments: options.segments }
        : {}),
    });
    if (options.memoryLimit !== undefined) this.allocator.setMemoryLimit(options.memoryLimit);
    if (options.cacheLimit !== undefined) this.allocator.setCacheLimit(options.cacheLimit);
  }

  /** The live allocation of trace id `id` (`undefined`: none, or it was refused). */
  allocation(id: number): Allocation<number> | undefined {
    return this.#live.get(id) ?? this.#quarantined.get(id);
  }

  /** Where allocation `allocation`'s memory starts. */
  addressOf(allocation: Allocation<number> | undefined): number | undefined {
    return this.source.addressOf(allocation?.buffer);
  }

  /** Applies one checked event; for an allocation, what it was charged and where it lies. */
  apply(event: readonly unknown[]): Applied | undefined {
    const allocator = this.allocator;
    const id = event[1] as number;
    switch (event[0]) {
      case "a": {
        let allocation: Allocation<number>;
        try {
          allocation = allocator.malloc(event[2] as number);
        } catch (error) {
          if (!(error instanceof OutOfMemoryError)) throw error;
          this.refused += 1;
          return { charged: 0, address: undefined };
        }
        this.#live.set(id, allocation);
        return { charged: allocation.allocatedLength, address: this.addressOf(allocation) };
      }
      case "f": {
        const allocation = this.#live.get(id);
        this.#live.delete(id);
        if (allocation !== undefined) allocator.free(allocation);
        return undefined;
      }
      case "q": {
        // Freed with a view moved away: never cached, quarantined until the "r" event.
        const allocation = this.#live.get(id);
        this.#live.delete(id);
        if (allocation !== undefined) {
          allocator.quarantine(allocation);
          this.#quarantined.set(id, allocation);
        }
        return undefined;
      }
      case "r": {
        const allocation = this.#quarantined.get(id);
        this.#quarantined.delete(id);
        if (allocation !== undefined) allocator.endQuarantine(allocation);
        return undefined;
      }
      case "m":
        this.#mappings.set(id, allocator.addMapping(event[2] as number));
        return undefined;
      case "u": {
        const mapping = this.#mappings.get(id);
        this.#mappings.delete(id);
        if (mapping !== undefined) allocator.removeMapping(mapping);
        return undefined;
      }
      case "l":
        if (event[1] === "memory") allocator.setMemoryLimit(event[2] as number);
        else if (event[1] === "cache") allocator.setCacheLimit(event[2] as number);
        // A wired limit changes residency only, which a replay of the allocator does not have.
        return undefined;
      case "c":
        allocator.clearCache();
        return undefined;
      case "p":
        allocator.resetPeak();
        return undefined;
    }
    return undefined;
  }
}
