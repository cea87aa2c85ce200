import type { NativeMappedFile, NativeMemoryHandle } from "../types.js";
import { AddonAllocation } from "./allocation.js";
import { callNative } from "./call.js";
import type { AddonOwner } from "./owner.js";
import type { RawMappedFileHandle } from "./raw.js";

/**
 * A file an addon mapped private and copy-on-write: the {@link NativeMappedFile} over a raw mapped-file
 * handle. The CPU reads it through `contents()` on every backend; where it is for native code
 * (`memoryHandle()`) is the subclass's.
 */
export abstract class AddonMappedFile<Handle extends NativeMemoryHandle = NativeMemoryHandle>
  extends AddonAllocation<Handle>
  implements NativeMappedFile
{
  /** The path it was mapped from. */
  readonly path: string;
  /** The mapped length: whole pages. */
  readonly mappedLength: number;

  /** Wraps a mapped-file handle that `owner`'s addon made of `path` (a backend's `mapFile`). */
  protected constructor(raw: RawMappedFileHandle, path: string, owner: AddonOwner) {
    super(raw, owner, "mapped file");
    this.path = path;
    this.mappedLength = raw.mappedLength;
  }

  /**
   * After `release()`, the bytes the addon still holds for a view moved away (the mapped length), 0 once
   * its last holder drops it; 0 before release.
   */
  get quarantinedBytes(): number {
    return this.released ? (this.raw.quarantinedBytes ?? 0) : 0;
  }

  /** The file's bytes as an external `ArrayBuffer` (writes stay private), detached on release. */
  contents(): ArrayBuffer {
    this.assertLive("contents");
    return this.view();
  }

  /**
   * Detaches every `ArrayBuffer` handed out so far, without unmapping (a deferred release); the next
   * `contents()` makes a new one. A view that escaped (moved away by `transfer()`) keeps the mapping alive in
   * the addon until it is collected: a mapping is never reused, so nothing else needs to know. Throws after
   * release.
   */
  detachContents(): void {
    this.assertLive("detachContents");
    try {
      this.detachViews();
    } finally {
      this.forgetView(); // after the native call, as in release()
    }
  }
}
