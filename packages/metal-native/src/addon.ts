/**
 * `@nuvec/metal-native/addon`: for writing a {@link NativeBackend} over a Node-API addon with the same raw
 * interface as this package's (handle classes for buffers, mapped files and residency sets; typed errors
 * with a `code`). The wrappers check every argument and state before native code runs and turn what the
 * addon throws into the family's error kinds; a backend subclasses them for what differs (where memory is,
 * calls of its own). `@nuvec/cuda-native` is built on it.
 *
 * @packageDocumentation
 */

export { AddonAllocation } from "./addon/allocation.js";
export { AddonBackend } from "./addon/backend.js";
export { AddonBuffer } from "./addon/buffer.js";
export { callNative } from "./addon/call.js";
export { AddonMappedFile } from "./addon/mapped-file.js";
export type { AllocationKind } from "./addon/ownership.js";
export type * from "./addon/raw.js";
export { AddonResidencySet } from "./addon/residency-set.js";
