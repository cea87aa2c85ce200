// The root of the family, so that one import is enough to catch any nuvec error.
export { NuvecArgumentError, NuvecError } from "@nuvec/stats";
export {
  ResidencyArgumentError,
  ResidencyError,
  type ResidencyErrorCode,
  ResidencyStateError,
} from "./errors.js";
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
