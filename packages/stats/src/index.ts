export { NuvecArgumentError, NuvecError } from "./errors.js";
export { type FormatMemoryStatsOptions, formatBytes, formatMemoryStats } from "./format.js";
export { emptyMemoryStats, MEMORY_STATS_FIELDS, type MemoryStats } from "./memory-stats.js";
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
