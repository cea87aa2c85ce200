import type { AllocatorPolicy } from "./options.js";

// Every policy once, the default first. Typed by the union: a policy added to AllocatorPolicy and not here
// fails to compile, so tools that take their choices from the list never miss one.
const EVERY_POLICY: Record<AllocatorPolicy, true> = { bounded: true, mlx: true, segments: true };

/** Every {@link AllocatorPolicy}, the default first: what tools list, compare and accept. */
export const ALLOCATOR_POLICIES: readonly AllocatorPolicy[] = Object.freeze(
  Object.keys(EVERY_POLICY) as AllocatorPolicy[],
);
