/**
 * `@nuvec/native-core`: what every nuvec backend shares in TypeScript: the {@link NativeBackend} interface,
 * the factories of the errors a backend throws (kinds of `@nuvec/stats`), the device facts and the argument checks. Private to the workspace: each
 * backend bundles it into its own build, and `@nuvec/metal-native` exports it to users.
 *
 * @packageDocumentation
 */

export {
  checkBufferLength,
  checkByteCount,
  checkOptionalPointer,
  checkPath,
  checkReadSpan,
  checkViewLength,
  checkWriteSpan,
} from "./arguments.js";
export {
  allocationFailed,
  kernelNotFound,
  lookAlike,
  moduleError,
  notHostVisible,
  releasedError,
  systemCallError,
} from "./errors.js";
export { BackendFacts, deviceFacts } from "./facts.js";
export { checkRange, offsetHandle } from "./range.js";
export type * from "./streams.js";
export { KERNEL_PARAMETER_KINDS } from "./streams.js";
export type * from "./types.js";
