// What a buffer or mapped file calls on the device that made it: a handle needs these operations, not the
// Device class (which imports the handles), so the modules form no circle.
import type { NativeBackend } from "@nuvec/metal-native";
import type { FreeOptions } from "./options.js";

/** The operations a {@link DeviceBuffer} or {@link MappedFile} calls on its device; a `Device` has them all. */
export interface HandleOwner {
  /** True once the device was closed. */
  readonly closed: boolean;
  /** The runtime-author surface: the handle reads whether the backend's memory is host-visible. */
  readonly native: { readonly backend: NativeBackend; readonly hostVisible: boolean | undefined };
  /** Frees `handle` (this buffer or mapped file). */
  free(handle: object, options?: FreeOptions): void;
}

/**
 * @internal What only a Device passes to the constructor of a {@link MappedFile}: `new MappedFile(...)` from
 * outside cannot forge a handle over memory the Device never mapped.
 */
export const MADE_BY_DEVICE: unique symbol = Symbol("made by a Device");
