import type { NativeBuffer, NativeMemoryHandle } from "../types.js";
import { AddonAllocation } from "./allocation.js";
import type { AddonBackend } from "./backend.js";
import { callNative } from "./call.js";
import type { RawBufferHandle } from "./raw.js";

/**
 * A buffer of an addon's memory: the {@link NativeBuffer} over a raw buffer handle, every argument and state
 * checked before native code runs. What differs between addons is where the memory is (`memoryHandle()`, the
 * subclass's) and any calls of their own (CUDA's `read`/`write`).
 */
export abstract class AddonBuffer<Handle extends NativeMemoryHandle = NativeMemoryHandle>
  extends AddonAllocation<Handle>
  implements NativeBuffer
{
  #quarantined = false;
  // Whether a view may exist: detachContents() on the allocator's cache path then costs no native call when
  // nobody asked for the contents (the common case, and the only one where the CPU cannot address it).
  #viewsHandedOut = false;

  /** Wraps a buffer handle that `owner`'s addon made (a backend's `newBuffer`). */
  protected constructor(raw: RawBufferHandle, owner: AddonBackend) {
    super(raw, owner, "buffer");
  }

  /**
   * True once `detachContents()` found a view handed out that it could not detach: one detached by someone
   * else (moved away by `ArrayBuffer.prototype.transfer()`), or one already collected whose finalizer has
   * not run yet (the addon holds views weakly and cannot tell the two apart). Such a buffer must never be
   * cached or reused; release it, and the addon keeps the memory until that view's finalizer runs.
   */
  get quarantined(): boolean {
    return this.#quarantined;
  }

  /**
   * After `release()`, the bytes the addon still holds for a view moved away (its allocated size), 0 once
   * that view is collected; 0 before release.
   */
  get quarantinedBytes(): number {
    return this.released ? (this.raw.quarantinedBytes ?? 0) : 0;
  }

  /**
   * The memory as an external `ArrayBuffer` (no copy; the same one while it lives), detached on release;
   * where the CPU cannot address it, the addon's typed refusal. Throws after release.
   */
  contents(): ArrayBuffer {
    this.assertLive("contents");
    // Held here only to the end of the job (job-views.ts): a strong reference kept longer would keep alive
    // whatever the caller ties to the view (the Device's owner of it) for as long as this buffer is cached.
    const contents = this.view();
    this.#viewsHandedOut = true;
    return contents;
  }

  /**
   * Detaches every `ArrayBuffer` handed out so far without releasing the memory (the device calls it when a
   * freed buffer goes to the cache); the next `contents()` makes a new one. Throws after release.
   */
  detachContents(): void {
    this.assertLive("detachContents");
    if (!this.#viewsHandedOut) return;
    this.#viewsHandedOut = false;
    this.forgetView();
    // `true` when a view escaped; an addon that cannot tell answers nothing, read as false.
    if (callNative(() => this.raw.detachContents()) === true) this.#quarantined = true;
  }
}
