// The allocator's refusals, each one of the family's kinds (`@nuvec/stats`) with its code and message.
import { ArgumentError, OutOfMemoryError, StateError } from "@nuvec/stats";

/**
 * A buffer or mapping would push `active + mapped` past the memory limit (nuvec's hard limit: MLX only treats
 * its limit as a guideline). `requested` is the size class, or the charged bytes of a mapping.
 */
export function outOfMemory(
  requested: number,
  active: number,
  mapped: number,
  limit: number,
  quarantined = 0,
): OutOfMemoryError {
  return new OutOfMemoryError(
    "ERR_NUVEC_OUT_OF_MEMORY",
    quarantined === 0
      ? `out of memory: ${requested} bytes requested with ${active} active and ${mapped} mapped ` +
          `would exceed the memory limit of ${limit} bytes`
      : `out of memory: ${requested} bytes requested with ${active} active, ${mapped} mapped and ` +
          `${quarantined} quarantined (freed buffers held until the views moved away from them are ` +
          `collected) would exceed the memory limit of ${limit} bytes`,
    { requested, active, mapped, quarantined, limit },
  );
}

/** One more system buffer or mapped file would exceed the device's resource limit, even with the cache released. */
export function resourceLimit(limit: number): OutOfMemoryError {
  return new OutOfMemoryError(
    "ERR_NUVEC_RESOURCE_LIMIT",
    `resource limit exceeded: the device allows at most ${limit} live buffers and mapped files`,
    { limit },
  );
}

/** The buffer source failed twice: once, then again after the whole cache was released; `cause` its last error. */
export function systemAllocationFailed(requested: number, cause: unknown): OutOfMemoryError {
  return new OutOfMemoryError(
    "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED",
    `the system could not allocate a buffer of ${requested} bytes, even after the cache was released`,
    { requested, cause },
  );
}

/** A request larger than the device's maximum buffer length. */
export function bufferTooLarge(requested: number, maximum: number): ArgumentError {
  return new ArgumentError(
    "bytes",
    `cannot allocate ${requested} bytes: larger than the device's maximum buffer length of ${maximum} bytes`,
    { code: "ERR_NUVEC_BUFFER_TOO_LARGE", requested, maximum },
  );
}

/** An allocation or mapping given back twice. */
export function doubleFree(what: "allocation" | "mapping"): StateError {
  return new StateError("ERR_NUVEC_DOUBLE_FREE", `this ${what} was already given back`);
}

/** An allocation or mapping that this allocator did not hand out. */
export function foreignAllocation(what: "allocation" | "mapping"): ArgumentError {
  return new ArgumentError(what, `this ${what} was not made by this allocator`, {
    code: "ERR_NUVEC_FOREIGN_ALLOCATION",
  });
}

/** Any call after `close()`. */
export function allocatorClosed(operation: string): StateError {
  return new StateError("ERR_NUVEC_ALLOCATOR_CLOSED", `cannot ${operation}: the allocator is closed`);
}

/** `endQuarantine()` of an allocation this allocator holds in no quarantine (never, or no longer). */
export function notQuarantined(): ArgumentError {
  return new ArgumentError(
    "allocation",
    "endQuarantine(): this allocation is not quarantined by this allocator (never quarantined, or its quarantine ended)",
  );
}
