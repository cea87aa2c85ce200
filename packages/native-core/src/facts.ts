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

/**
 * The base of the backend classes (the mock, the addons'): the device facts as read-only fields,
 * declared once in {@link DeviceFacts} (this interface merges with the class) and copied from what the device
 * reported when the backend was opened.
 */
export interface BackendFacts extends DeviceFacts {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor assigns every field of DeviceFacts (deviceFacts copies them all)
export abstract class BackendFacts {
  /** Copies every fact of `facts` onto the backend. */
  protected constructor(facts: DeviceFacts) {
    Object.assign(this, deviceFacts(facts));
  }
}
