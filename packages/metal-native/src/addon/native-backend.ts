import { checkOptionalPointer } from "@nuvec/native-core";
import {
  AddonBackend,
  callNative,
  NativeAddonBufferRange,
  type RawBufferHandle,
  type RawMappedFileHandle,
  type RawResidencySetHandle,
} from "@nuvec/native-core/addon";
import { ArgumentError } from "@nuvec/stats";
import { NativeAddonBuffer, NativeAddonMappedFile, NativeAddonResidencySet } from "./handles.js";
import type {
  RawMetalAddon,
  RawMetalBufferHandle,
  RawMetalMappedFileHandle,
  RawMetalResidencySetHandle,
} from "./raw-metal.js";

// The handles reach the wrap methods typed as every addon's; they are this addon's (it made them), whose
// handles also say where their memory is: hence the casts below.

/**
 * The native addon of this package as a {@link NativeBackend}: Metal on macOS, host memory on Linux. Device
 * facts read once, and every argument checked in TypeScript before native code runs (the addon checks
 * again). Get it from {@link loadNativeBackend}.
 */
export class NativeAddonBackend extends AddonBackend<
  NativeAddonBuffer,
  NativeAddonMappedFile,
  NativeAddonResidencySet
> {
  readonly #addon: RawMetalAddon;

  /** @internal Use {@link loadNativeBackend}. */
  constructor(addon: RawMetalAddon) {
    super(
      addon,
      callNative(() => addon.facts()),
    );
    this.#addon = addon;
  }

  /**
   * Metal: checks that `device` (a runtime's `id<MTLDevice>`) is the GPU the buffers come from; a
   * `ArgumentError` otherwise, and always on the host (no Metal device).
   */
  checkMetalDevice(device: bigint): void {
    checkOptionalPointer(device, "device");
    if (device === undefined) throw new ArgumentError("device", "checkMetalDevice(): device is required");
    callNative(() => this.#addon.checkMetalDevice(device));
  }

  protected override wrapBuffer(raw: RawBufferHandle): NativeAddonBuffer {
    return new NativeAddonBuffer(raw as RawMetalBufferHandle, this);
  }

  /** A handle of the addon over the range (its views are its own), kept from the segment's release. */
  protected override wrapRange(
    segment: NativeAddonBuffer,
    offset: number,
    length: number,
  ): NativeAddonBufferRange {
    return callNative(
      () =>
        new NativeAddonBufferRange(
          new this.#addon.NativeBufferHandle(segment.raw as RawBufferHandle, offset, length),
          segment,
          offset,
          this,
        ),
    );
  }

  protected override wrapMappedFile(raw: RawMappedFileHandle, path: string): NativeAddonMappedFile {
    return new NativeAddonMappedFile(raw as RawMetalMappedFileHandle, path, this);
  }

  protected override wrapResidencySet(raw: RawResidencySetHandle): NativeAddonResidencySet {
    return new NativeAddonResidencySet(raw as RawMetalResidencySetHandle, this);
  }
}
