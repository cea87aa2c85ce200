import { NativeReleasedError } from "../errors.js";
import type { NativeMappedFile, NativeMemoryHandle } from "../types.js";
import type { AddonBackend } from "./backend.js";
import { callNative } from "./call.js";
import type { RawMappedFileHandle, RawMetalMappedFileHandle } from "./raw.js";

/**
 * A file an addon mapped private and copy-on-write: the {@link NativeMappedFile} over a raw mapped-file
 * handle. The CPU reads it through `contents()` on every backend; where it is for native code
 * ({@link AddonMappedFile.memoryHandle}) is the subclass's.
 */
export abstract class AddonMappedFile<Handle extends NativeMemoryHandle = NativeMemoryHandle>
  implements NativeMappedFile
{
  /** The path it was mapped from. */
  readonly path: string;
  /** The file's length in bytes. */
  readonly length: number;
  /** The mapped length: whole pages. */
  readonly mappedLength: number;
  /** The bytes the system holds for the mapping (the mapped length). */
  readonly allocatedSize: number;
  /** @internal */
  readonly raw: RawMappedFileHandle;
  /** @internal */
  readonly owner: AddonBackend;
  #released = false;

  /** Wraps a mapped-file handle that `owner`'s addon made of `path` (a backend's `mapFile`). */
  protected constructor(raw: RawMappedFileHandle, path: string, owner: AddonBackend) {
    this.raw = raw;
    this.owner = owner;
    this.path = path;
    this.length = raw.length;
    this.mappedLength = raw.mappedLength;
    this.allocatedSize = raw.allocatedSize;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    return this.#released;
  }

  /** The file's bytes as an external `ArrayBuffer` (writes stay private), detached on release. */
  contents(): ArrayBuffer {
    this.assertLive("contents");
    return callNative(() => this.raw.contents());
  }

  /**
   * Detaches every `ArrayBuffer` handed out so far, without unmapping (a deferred release); the next
   * `contents()` makes a new one. A view that escaped (moved away by `transfer()`) keeps the mapping alive in
   * the addon until it is collected: a mapping is never reused, so nothing else needs to know. Throws after
   * release.
   */
  detachContents(): void {
    this.assertLive("detachContents");
    callNative(() => this.raw.detachContents());
  }

  /** Where the mapping is (its first byte is the file's first byte), frozen; throws after release. */
  nativeHandle(): Handle {
    this.assertLive("nativeHandle");
    return callNative(() => Object.freeze(this.memoryHandle()));
  }

  /** Unmaps the file (once no residency set holds it) and detaches every view. A second call throws. */
  release(): void {
    this.assertLive("release");
    this.#released = true;
    callNative(() => this.raw.release());
  }

  /** Where the mapping is, as this addon says it: what `nativeHandle()` gives, frozen. */
  protected abstract memoryHandle(): Handle;

  /** Throws a {@link NativeReleasedError} naming `method` once the mapped file was released. */
  protected assertLive(method: string): void {
    if (this.#released) throw new NativeReleasedError(`${method}(): the mapped file was already released`);
  }
}

/** A file mapped private and copy-on-write by @nuvec/metal-native's addon. */
export class NativeAddonMappedFile extends AddonMappedFile {
  readonly #raw: RawMetalMappedFileHandle;

  /** @internal Made by {@link NativeAddonBackend.mapFile}. */
  constructor(raw: RawMetalMappedFileHandle, path: string, owner: AddonBackend) {
    super(raw, path, owner);
    this.#raw = raw;
  }

  /** The address of the mapping (host), or the no-copy `id<MTLBuffer>` over it (Metal), from the addon. */
  protected override memoryHandle(): NativeMemoryHandle {
    return this.#raw.nativeHandle();
  }
}
