/**
 * `@nuvec/metal-native`: the one place where nuvec touches the system. {@link loadNativeBackend} gives the
 * real backend of this machine (Metal on macOS, host memory on Linux); `@nuvec/metal-native/mock` gives a
 * pretend device for tests on any platform. Both implement {@link NativeBackend}.
 *
 * @packageDocumentation
 */

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
export { deviceFacts } from "./facts.js";
export {
  loadNativeBackend,
  NativeAddonBackend,
  NativeAddonBuffer,
  NativeAddonMappedFile,
  NativeAddonResidencySet,
} from "./native.js";
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
