// The error family, so that one import is enough to catch any nuvec error.
export {
  ArgumentError,
  FormatError,
  NativeUnavailableError,
  NuvecError,
  type NuvecErrorCode,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/stats";
export { Residency } from "./residency.js";
export {
  DEFAULT_MAX_PERCENT_PER_SET,
  MAX_PERCENT_PER_SET_VARIABLE,
  MAX_RESIDENCY_SETS,
  MIN_RESIDENCY_SET_BYTES,
  maxPercentPerSet,
  maxPercentPerSetFromEnvironment,
  residencySetCap,
} from "./set-cap.js";
export type { ResidencyBackend, ResidencyOptions, ResidencySetHandle } from "./types.js";
