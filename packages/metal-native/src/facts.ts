import type { DeviceFacts } from "./types.js";

/** The device facts of a backend as a plain object (a snapshot: every field of {@link DeviceFacts}). */
export function deviceFacts(backend: DeviceFacts): DeviceFacts {
  return {
    name: backend.name,
    platform: backend.platform,
    memorySize: backend.memorySize,
    recommendedMaxWorkingSetSize: backend.recommendedMaxWorkingSetSize,
    maxBufferLength: backend.maxBufferLength,
    resourceLimit: backend.resourceLimit,
    pageSize: backend.pageSize,
    supportsResidencySets: backend.supportsResidencySets,
    // Only where a backend states it (CUDA: false), so the snapshot of the others is unchanged.
    ...(backend.hostVisible === undefined ? {} : { hostVisible: backend.hostVisible }),
  };
}
