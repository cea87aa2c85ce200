// The handles of @nuvec/metal-native's own addon: the shared wrappers of @nuvec/native-core, plus where
// their memory is (a host address, or Metal's buffer and residency set objects).
import type { NativeMemoryHandle } from "@nuvec/native-core";
import { type AddonBackend, AddonBuffer, AddonMappedFile, AddonResidencySet } from "@nuvec/native-core/addon";
import type {
  RawMetalBufferHandle,
  RawMetalMappedFileHandle,
  RawMetalResidencySetHandle,
} from "./raw-metal.js";

/** A buffer of real memory from @nuvec/metal-native's addon (Metal buffer or host memory). */
export class NativeAddonBuffer extends AddonBuffer {
  readonly #raw: RawMetalBufferHandle;

  /** @internal Made by {@link NativeAddonBackend.newBuffer}. */
  constructor(raw: RawMetalBufferHandle, owner: AddonBackend) {
    super(raw, owner);
    this.#raw = raw;
  }

  /**
   * `{ platform: "host", address }`, or on Metal also the `id<MTLBuffer>` (`metalBuffer`, not retained) and
   * its `gpuAddress`, from the addon.
   */
  protected override memoryHandle(): NativeMemoryHandle {
    return this.#raw.nativeHandle();
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

/**
 * A residency set of @nuvec/metal-native's addon: `MTLResidencySet` on Metal, `mlock` on the host. As with
 * Metal, a set holds what it was given: a buffer released while in a set keeps its memory (and its wiring)
 * until it is removed and the set committed, or the set is released.
 */
export class NativeAddonResidencySet extends AddonResidencySet {
  readonly #raw: RawMetalResidencySetHandle;

  /** @internal Made by {@link NativeAddonBackend.newResidencySet}. */
  constructor(raw: RawMetalResidencySetHandle, owner: AddonBackend) {
    super(raw, owner);
    this.#raw = raw;
  }

  /** Metal: the `id<MTLResidencySet>` as a pointer (not retained); `undefined` on the host or after release. */
  get metalResidencySet(): bigint | undefined {
    return this.released ? undefined : this.#raw.metalResidencySet;
  }
}
