/**
 * `@nuvec/native-core`: what every nuvec backend shares in TypeScript: the {@link NativeBackend} interface,
 * the `NativeError` classes, the device facts and the argument checks. Private to the workspace: each
 * backend bundles it into its own build, and `@nuvec/metal-native` exports it to users.
 *
 * @packageDocumentation
 */

export { checkBufferLength, checkOptionalPointer, checkPath } from "./arguments.js";
export {
  NativeAllocationError,
  NativeArgumentError,
  NativeError,
  type NativeErrorCode,
  NativeNotHostVisibleError,
  NativeReleasedError,
  NativeSystemError,
  NativeUnavailableError,
  type NativeUnavailableReason,
} from "./errors.js";
export { BackendFacts, deviceFacts } from "./facts.js";
export { checkRange, offsetHandle } from "./range.js";
export type {
  BackendPlatform,
  DeviceFacts,
  HostMemoryHandle,
  MetalMemoryHandle,
  MockMemoryHandle,
  NativeAllocation,
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeMappedFile,
  NativeMemoryHandle,
  NativeResidencySet,
} from "./types.js";
