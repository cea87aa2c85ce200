/**
 * One residency set as the manager drives it (Metal's `MTLResidencySet`; on the host backend, `mlock`).
 * `add` and `remove` take effect at the next `commit`; `requestResidency` asks the system to keep the
 * committed allocations resident and stands until `endResidency`.
 */
export interface ResidencySetHandle<A> {
  /** Adds an allocation (effective at the next `commit`). */
  add(allocation: A): void;
  /** Removes an allocation (effective at the next `commit`). */
  remove(allocation: A): void;
  /** Applies the pending adds and removes. */
  commit(): void;
  /** Asks the system to keep the set's committed allocations resident. */
  requestResidency(): void;
  /** Ends the residency request; called by `Residency.close` when present. */
  endResidency?(): void;
  /** Frees the set; called by `Residency.close` (after `endResidency`) when present. */
  release?(): void;
}

/** What the residency manager needs from a device: the calls the seed makes on Metal. */
export interface ResidencyBackend<A, S extends ResidencySetHandle<A> = ResidencySetHandle<A>> {
  /** Whether the device has residency sets at all (Metal 3 GPUs on macOS 15 and later). */
  readonly supportsResidencySets: boolean;
  /** A new, empty residency set, or `undefined` when the system cannot make one. */
  newResidencySet(): S | undefined;
  /** Attaches a set to the command queue (Metal's `addResidencySet:`), so GPU work sees it. */
  attachResidencySet(set: S): void;
  /**
   * The bytes the system holds for an allocation (Metal's `allocatedSize`): read once when the allocation
   * is inserted and never again, so the manager's totals cannot drift from what it added to its sets.
   */
  allocatedSize(allocation: A): number;
}

/** Options of a {@link Residency}. */
export interface ResidencyOptions {
  /**
   * The GPU's working set in bytes (Metal's `recommendedMaxWorkingSetSize`), a non-negative safe integer:
   * the per-set cap is a percentage of it.
   */
  workingSet: number;
  /**
   * The text of `MLX_RESIDENCY_SET_MAX_PCT`, the per-set cap in percent of the working set (see
   * `maxPercentPerSet`). Left out or `undefined`: read from the environment when the manager is made.
   * `null`: the variable is unset (the default of 5), whatever the environment says.
   */
  maxPercentPerSet?: string | null | undefined;
}
