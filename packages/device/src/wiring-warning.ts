// The one process warning a Device gives when the platform refuses to wire memory: residency's figures say
// what was asked for, the backend's counters what the platform did; the first refusal says so, once.
import type { NativeAllocation, NativeBackend } from "@nuvec/metal-native";

/** What the warning reads of the Device's residency, and the insert it watches. */
interface WatchedResidency {
  readonly wired: number;
  readonly wiredLimit: number;
  insert(allocation: NativeAllocation, mapped: boolean): void;
}

/** Watches wiring calls for one Device and warns, once, when the platform refused some. */
export class WiringWarning {
  readonly #backend: NativeBackend;
  readonly #residency: WatchedResidency;
  #warned = false;

  /** `residency` is the Device's: its `wired` is what it asked the platform to wire, `wiredLimit` the limit. */
  constructor(backend: NativeBackend, residency: WatchedResidency) {
    this.#backend = backend;
    this.#residency = residency;
  }

  /**
   * Tracks a new system buffer or mapped file (`mapped`) in residency, watched as {@link watch} does. Every
   * cache miss passes here: while nothing may be wired (a wired limit of 0, the default) or once warned, the
   * insert runs directly, without the closure a watch takes (a fifth of a miss over the mock).
   */
  insert(allocation: NativeAllocation, mapped: boolean): void {
    const residency = this.#residency;
    if (this.#warned || residency.wiredLimit <= 0) residency.insert(allocation, mapped);
    else this.watch(() => residency.insert(allocation, mapped));
  }

  /**
   * Runs `body`, something that may wire memory; the first time the platform refuses (`wiringFailures`
   * grows), one process warning says so, with the backend's advice. Skipped (no native call) while nothing
   * may be wired (`mayWire`, by default a wired limit above 0) or once warned.
   */
  watch(body: () => void, mayWire = this.#residency.wiredLimit > 0): void {
    if (this.#warned || !mayWire) {
      body();
      return;
    }
    const backend = this.#backend;
    const before = backend.counters().wiringFailures;
    body();
    const failures = backend.counters().wiringFailures - before;
    if (failures <= 0) return;
    this.#warned = true;
    const advice = backend.lastWiringError;
    const wiredByPlatform = backend.counters().wiredBytes;
    process.emitWarning(
      `nuvec: the system refused to wire memory (${failures} failure${failures === 1 ? "" : "s"}): ` +
        `memoryStats().wired says ${this.#residency.wired} bytes (what residency asked for), the platform ` +
        `wired ${wiredByPlatform} (counters().wiredByPlatform). ` +
        (typeof advice === "string" ? advice : "The memory stays usable but may be paged out."),
      { type: "NuvecWiringWarning", code: "NUVEC_WIRING_FAILED" },
    );
  }
}
