/**
 * Memory use and limits of a device's allocator, in bytes. Each quantity has one name, and each peak is
 * `peak` + the name of the quantity it follows; `Device.resetPeak()` restarts every peak at its quantity's
 * current value (PyTorch's `reset_peak_memory_stats`; MLX sets its one peak to 0).
 *
 * `peakActiveWithMapped` compares with MLX's `get_peak_memory()` (MLX copies every weight, so its active
 * memory includes them): reset each after loading, in a fresh process per phase.
 *
 * Bytes are JavaScript numbers: exact up to `Number.MAX_SAFE_INTEGER` (8 PiB).
 */
export interface MemoryStats {
  /**
   * Bytes in live allocator buffers (what each is charged: its size class, or the cached block it reused),
   * weights copied from checkpoints included; mapped files not included. MLX: `get_active_memory`;
   * PyTorch: `allocated_bytes`.
   */
  active: number;
  /** The highest `active` since creation or the last `resetPeak`. PyTorch: `max_memory_allocated`. */
  peakActive: number;
  /**
   * Bytes of live memory-mapped files (checkpoints loaded without a copy): each file's whole length,
   * header included, rounded up to pages. Not in `active`. MLX does not map files.
   */
  mapped: number;
  /** `active + mapped`: everything held for live arrays, mapped checkpoints included. */
  activeWithMapped: number;
  /**
   * The highest `active + mapped` since creation or the last `resetPeak`, updated on every change of
   * either. MLX: `get_peak_memory` (which counts MLX's copied weights).
   */
  peakActiveWithMapped: number;
  /** Bytes held in the cache for reuse (not in `active`). MLX: `get_cache_memory`. */
  cache: number;
  /**
   * `active + cache`: every byte of buffers obtained from the system and not given back. PyTorch:
   * `memory_reserved`.
   */
  reserved: number;
  /** The highest `reserved` since creation or the last `resetPeak`. PyTorch: `max_memory_reserved`. */
  peakReserved: number;
  /**
   * Allocations and mappings that would push `active + mapped + quarantined` past this fail with an out-of-memory
   * error (a hard refusal; MLX's `set_memory_limit` is a guideline).
   */
  memoryLimit: number;
  /**
   * The cache is trimmed to at most this many bytes; it defaults to the memory limit in effect when the
   * device opens, as MLX's. MLX: `set_cache_limit`.
   */
  cacheLimit: number;
  /** Buffers obtained from the system (cache misses) so far. */
  systemAllocations: number;
  /**
   * Buffers and mapped files are kept resident up to this many bytes (see `Device.setWiredLimit`;
   * MLX: `set_wired_limit`).
   */
  wiredLimit: number;
  /**
   * Bytes residency placed in requested residency sets, mapped files included (`wired ≤ wiredLimit`): what
   * MLX's residency manager counts, i.e. what was *asked* to be kept resident. The system may have refused
   * part of it (host: `mlock` past `RLIMIT_MEMLOCK`; Metal does not report it): what it really wired is
   * `Device.counters().wiredByPlatform`.
   */
  wired: number;
  /** The part of `wired` that belongs to memory-mapped files. */
  wiredMapped: number;
  /**
   * Bytes of freed buffers the backend still holds because a view of theirs was moved out of its reach
   * (`ArrayBuffer.prototype.transfer()` or a `postMessage` transfer): never reused, given back once that
   * view is collected. Counted against the memory limit with `active + mapped`; in neither of them. Always 0
   * on backends whose views cannot be moved away (the mock).
   */
  quarantined: number;
}

/** The names of every {@link MemoryStats} field, each quantity followed by its peak. */
export const MEMORY_STATS_FIELDS: readonly (keyof MemoryStats)[] = Object.freeze([
  "active",
  "peakActive",
  "mapped",
  "activeWithMapped",
  "peakActiveWithMapped",
  "cache",
  "reserved",
  "peakReserved",
  "memoryLimit",
  "cacheLimit",
  "systemAllocations",
  "wiredLimit",
  "wired",
  "wiredMapped",
  "quarantined",
]);

/** A {@link MemoryStats} with every field `0`: the state of a device before anything happened. */
export function emptyMemoryStats(): MemoryStats {
  return {
    active: 0,
    peakActive: 0,
    mapped: 0,
    activeWithMapped: 0,
    peakActiveWithMapped: 0,
    cache: 0,
    reserved: 0,
    peakReserved: 0,
    memoryLimit: 0,
    cacheLimit: 0,
    systemAllocations: 0,
    wiredLimit: 0,
    wired: 0,
    wiredMapped: 0,
    quarantined: 0,
  };
}
