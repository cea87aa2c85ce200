// The Device's two policy parts, each made over the native backend: MLX's caching allocator (the memory
// figures) and residency (the wired ones). The Device owns them and connects them through the hooks.
import { type AllocatorPolicy, CachingAllocator } from "@nuvec/allocator";
import type { NativeAllocation, NativeBackend, NativeBuffer, NativeResidencySet } from "@nuvec/metal-native";
import { Residency } from "@nuvec/residency";
import type { DeviceOptions } from "./options.js";

/**
 * The allocator over `backend`'s buffers, with the options the Device passes on. The allocator checks them:
 * make it before anything else of the Device, so a refused option leaves nothing made on the backend.
 * `beforeUnmap` runs before memory of an address space goes back to the system (an expandable segment's
 * trim): the stream order waits there for work a fence on the space names.
 */
export function allocatorOver(
  backend: NativeBackend,
  options: DeviceOptions,
  hooks: {
    onAcquire: (buffer: NativeBuffer) => void;
    onRelease: (buffer: NativeBuffer) => void;
    /** Whether the backend was closed (a mock's `closed`): it released every buffer then. */
    backendClosed?: () => boolean;
  },
  beforeUnmap: (space: NativeBuffer) => void = () => {},
): CachingAllocator<NativeBuffer> {
  const policy = options.policy ?? defaultPolicy(backend);
  return new CachingAllocator<NativeBuffer>(
    {
      recommendedMaxWorkingSetSize: backend.recommendedMaxWorkingSetSize,
      memorySize: backend.memorySize,
      maxBufferLength: backend.maxBufferLength,
      resourceLimit: backend.resourceLimit,
      pageSize: backend.pageSize,
      acquire: (bytes) => backend.newBuffer(bytes),
      release: (buffer) => {
        // A backend closed under the Device released every buffer with it: a cached one is gone already,
        // so its release is no error, and the miss that trimmed it reports the closed backend itself.
        if (buffer.released && hooks.backendClosed?.() === true) return;
        buffer.release();
      },
      ...(backend.newBufferRange === undefined
        ? {}
        : {
            range: (segment: NativeBuffer, offset: number, length: number) =>
              backend.newBufferRange!(segment, offset, length),
            releaseRange: (range: NativeBuffer) => range.release(),
          }),
      ...(backend.mapGranularity === undefined ||
      backend.reserveAddressSpace === undefined ||
      backend.mapMemory === undefined ||
      backend.unmapMemory === undefined
        ? {}
        : {
            mapGranularity: backend.mapGranularity,
            reserve: (capacity: number) => backend.reserveAddressSpace!(capacity),
            map: (space: NativeBuffer, offset: number, length: number) =>
              backend.mapMemory!(space, offset, length),
            unmap: (space: NativeBuffer, offset: number, length: number) => {
              beforeUnmap(space);
              backend.unmapMemory!(space, offset, length);
            },
          }),
    },
    {
      ...(options.memoryLimit === undefined ? {} : { memoryLimit: options.memoryLimit }),
      ...(options.cacheLimit === undefined ? {} : { cacheLimit: options.cacheLimit }),
      policy,
      ...(options.segments === undefined ? {} : { segments: options.segments }),
      ...(options.reserveRatio === undefined ? {} : { reserveRatio: options.reserveRatio }),
      ...(options.boundedRelease === undefined ? {} : { boundedRelease: options.boundedRelease }),
      onAcquire: hooks.onAcquire,
      onRelease: hooks.onRelease,
    },
  );
}

/**
 * The policy a Device runs when `options.policy` is left out: `"segments"` on CUDA (device memory, where
 * every system allocation is a slow driver call), `"bounded"` elsewhere.
 */
export function defaultPolicy(backend: NativeBackend): AllocatorPolicy {
  return backend.platform === "cuda" && backend.newBufferRange !== undefined ? "segments" : "bounded";
}

/**
 * Residency over `backend`'s residency sets (it makes the first at once), each set it makes also pushed on
 * `sets`; attached to the runtime's command queue when `options.metal` gave one, so its command buffers see
 * them. `maxPercentPerSet` is the checked `residencySetMaxPercent`.
 */
export function residencyOver(
  backend: NativeBackend,
  options: DeviceOptions,
  maxPercentPerSet: string | undefined,
  sets: NativeResidencySet[],
): Residency<NativeAllocation, NativeResidencySet> {
  const commandQueue = options.metal?.commandQueue;
  return new Residency<NativeAllocation, NativeResidencySet>(
    {
      supportsResidencySets: backend.supportsResidencySets,
      newResidencySet: () => {
        const set = backend.newResidencySet();
        if (set !== undefined) sets.push(set);
        return set;
      },
      attachResidencySet: (set) =>
        commandQueue === undefined
          ? backend.attachResidencySet(set)
          : backend.attachResidencySet(set, commandQueue),
      allocatedSize: (allocation) => allocation.allocatedSize,
    },
    {
      workingSet: backend.recommendedMaxWorkingSetSize,
      ...(maxPercentPerSet === undefined ? {} : { maxPercentPerSet }),
    },
  );
}
