/**
 * `@nuvec/metal-native`: the one place where nuvec touches the system. {@link loadNativeBackend} gives the
 * real backend of this machine (Metal on macOS, host memory on Linux); `@nuvec/metal-native/mock` gives a
 * pretend device for tests on any platform. Both implement {@link NativeBackend}.
 *
 * @packageDocumentation
 */

export { deviceFacts } from "@nuvec/native-core";
export { NativeAddonBuffer, NativeAddonMappedFile, NativeAddonResidencySet } from "./addon/handles.js";
export { loadNativeBackend } from "./addon/loader.js";
export { NativeAddonBackend } from "./addon/native-backend.js";
export * from "./exports.js";
