export {
  ArgumentError,
  type ArgumentErrorCode,
  ERROR_CODES,
  FormatError,
  type FormatErrorCode,
  NativeUnavailableError,
  type NativeUnavailableReason,
  NuvecError,
  type NuvecErrorCode,
  OutOfMemoryError,
  type OutOfMemoryErrorByCode,
  type OutOfMemoryErrorCode,
  type OutOfMemoryErrorFields,
  type OutOfMemoryErrorOf,
  StateError,
  type StateErrorCode,
  SystemCallError,
  UnsupportedError,
  type UnsupportedErrorCode,
} from "./errors.js";
export { type FormatMemoryStatsOptions, formatBytes, formatMemoryStats } from "./format.js";
export { emptyMemoryStats, MEMORY_STATS_FIELDS, type MemoryStats } from "./memory-stats.js";
export { printable } from "./printable.js";
export {
  checkArgument,
  type Fields,
  type OptionsSchema,
  optionsSchema,
  type Rule,
  rules,
  type SchemaType,
} from "./schema.js";
export {
  allocationSize,
  assertByteCount,
  type ByteCountProblem,
  type ByteCountRange,
  byteCountProblem,
  describeValue,
  mappingSize,
  PAGE,
  SMALL,
} from "./size.js";
export { Teardown } from "./teardown.js";
