import type { AllocatorPolicy, BoundedRelease } from "./options.js";

/** The members of `Union` that `list` leaves out: `never` when it names every one. */
type Missing<Union, List extends readonly unknown[]> = Exclude<Union, List[number]>;

/**
 * Every {@link AllocatorPolicy} once, the default first: what tools list, compare and accept, and what the
 * option checks take their choices from. A policy added to the union and not here fails to compile.
 */
export const ALLOCATOR_POLICIES = Object.freeze(["bounded", "mlx", "segments"] as const);

/**
 * Every {@link BoundedRelease} order once, the default first: what the `boundedRelease` option checks
 * accept. An order added to the union and not here fails to compile.
 */
export const BOUNDED_RELEASES = Object.freeze(["fitting", "least-recent", "largest"] as const);

// The compile-time half of "every name once": each list names only members of its union (the assignments)
// and every member (the `never` checks).
const policies: readonly AllocatorPolicy[] = ALLOCATOR_POLICIES;
const releases: readonly BoundedRelease[] = BOUNDED_RELEASES;
const everyPolicy: Missing<AllocatorPolicy, typeof ALLOCATOR_POLICIES> extends never ? true : never = true;
const everyRelease: Missing<BoundedRelease, typeof BOUNDED_RELEASES> extends never ? true : never = true;
void [policies, releases, everyPolicy, everyRelease];
