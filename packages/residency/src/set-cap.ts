/**
 * The most residency sets one command queue gets. Metal's feature tables limit how many sets a queue
 * accepts; past this many, allocations go to the emptiest set, which then grows past the per-set cap.
 */
export const MAX_RESIDENCY_SETS = 32;

/** The smallest per-set cap MLX allows, 64 MiB: below it, many small sets would cost more than they save. */
export const MIN_RESIDENCY_SET_BYTES = 64 * 1024 * 1024;

/** The per-set cap in percent of the working set when `MLX_RESIDENCY_SET_MAX_PCT` is unset or unparsable. */
export const DEFAULT_MAX_PERCENT_PER_SET = 5;

/** The environment variable MLX reads the per-set cap from. */
export const MAX_PERCENT_PER_SET_VARIABLE = "MLX_RESIDENCY_SET_MAX_PCT";

// Rust's `str::trim` removes characters with the Unicode White_Space property, which is not JavaScript's
// `trim` (that one removes U+FEFF and keeps U+0085): spell Rust's set out so both agree on every input.
const RUST_WHITESPACE =
  "[\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]";
const TRIM = new RegExp(`^${RUST_WHITESPACE}+|${RUST_WHITESPACE}+$`, "g");
// What Rust's `i64::from_str` accepts: an optional sign and at least one ASCII digit, nothing else.
const INTEGER = /^[+-]?[0-9]+$/;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/**
 * The percent of the working set one residency set may hold, from the text of `MLX_RESIDENCY_SET_MAX_PCT`
 * as the seed reads it (`v.trim().parse::<i64>()`): unset (`undefined` or `null`), empty, not an integer
 * (`"abc"`, `"5.5"`, `"1e2"`) or outside the 64-bit range gives the default, 5; an integer from 1 to 99 is
 * itself; 0, a negative number or 100 and above give 0, which means one set with no cap.
 */
export function maxPercentPerSet(text: string | null | undefined): number {
  if (text === undefined || text === null) return DEFAULT_MAX_PERCENT_PER_SET;
  const trimmed = String(text).replace(TRIM, "");
  if (!INTEGER.test(trimmed)) return DEFAULT_MAX_PERCENT_PER_SET;
  const value = BigInt(trimmed);
  if (value < I64_MIN || value > I64_MAX) return DEFAULT_MAX_PERCENT_PER_SET;
  return value >= 1n && value < 100n ? Number(value) : 0;
}

/**
 * The per-set cap in bytes for a GPU working set of `workingSet` bytes (a non-negative safe integer) and the
 * text of `MLX_RESIDENCY_SET_MAX_PCT`: `max(floor(workingSet / 100) · pct, 64 MiB)`, dividing first as the
 * seed does; 0 (one set) when the percent is 0.
 */
export function residencySetCap(workingSet: number, percentText: string | null | undefined): number {
  const percent = maxPercentPerSet(percentText);
  if (percent === 0) return 0;
  // Integer division without a floating-point quotient: exact for every safe integer.
  const hundredths = (workingSet - (workingSet % 100)) / 100;
  return Math.max(hundredths * percent, MIN_RESIDENCY_SET_BYTES);
}

/**
 * The value of `MLX_RESIDENCY_SET_MAX_PCT` in the environment, read through `globalThis` so that this
 * package needs no Node.js types or modules (`undefined` where there is no `process`, or when reading it
 * throws, as under Deno without the permission).
 */
export function maxPercentPerSetFromEnvironment(): string | undefined {
  try {
    const environment = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
      ?.env;
    const value = environment?.[MAX_PERCENT_PER_SET_VARIABLE];
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}
