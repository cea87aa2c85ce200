/**
 * `@nuvec/native-core/addon`: a {@link NativeBackend} over a Node-API addon built from the shared N-API layer
 * (native/napi/): handle classes for buffers, mapped files and residency sets, every argument and state
 * checked before native code runs, and what the addon throws turned into the error kinds of `@nuvec/stats`. A
 * backend subclasses them for what differs (where memory is, calls of its own). `@nuvec/metal-native`
 * exports it as `@nuvec/metal-native/addon`, which `@nuvec/cuda-native` builds on.
 *
 * @packageDocumentation
 */

export { AddonAllocation } from "./addon/allocation.js";
export { AddonBackend } from "./addon/backend.js";
export { AddonBuffer, NativeAddonBufferRange } from "./addon/buffer.js";
export { AddonBufferRange } from "./addon/buffer-range.js";
export { callNative } from "./addon/call.js";
export { AddonMappedFile } from "./addon/mapped-file.js";
export { checkNativeBinary, type NativeBinaryCheck, nativeBinaryDefect } from "./addon/native-binary.js";
export type { AddonOwner } from "./addon/owner.js";
export type { AllocationKind } from "./addon/ownership.js";
export type * from "./addon/raw.js";
export { AddonResidencySet } from "./addon/residency-set.js";
export { checkByteCount } from "./arguments.js";
