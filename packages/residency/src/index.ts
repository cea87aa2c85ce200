// The root of the error family and the kinds residency throws (every kind is in `@nuvec/stats`).
export { ArgumentError, NuvecError, StateError } from "@nuvec/stats";
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
