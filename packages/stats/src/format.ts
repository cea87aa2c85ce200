import { ArgumentError } from "./errors.js";
import { MEMORY_STATS_FIELDS, type MemoryStats } from "./memory-stats.js";
import { describeValue } from "./size.js";

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"] as const;

/**
 * Bytes for people, in binary units with two decimals: `formatBytes(1610612736)` is `"1.50 GiB"`,
 * `formatBytes(512)` is `"512 B"`. Negative values keep their sign.
 *
 * @throws ArgumentError when `bytes` is not a finite number.
 */
export function formatBytes(bytes: number): string {
  return formatNamedBytes(bytes, "bytes");
}

/** {@link formatBytes} of a value an error names `name` (`stats.active`). */
function formatNamedBytes(bytes: unknown, name: string): string {
  if (typeof bytes !== "number" || !Number.isFinite(bytes)) {
    throw new ArgumentError(name, `${name} must be a finite number, got ${describeValue(bytes)}`);
  }
  const sign = bytes < 0 ? "-" : "";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${sign}${value} B`;
  // 1023.999 KiB would print as "1024.00 KiB": carry into the next unit instead.
  if (value.toFixed(2) === "1024.00" && unit < UNITS.length - 1) {
    value = 1;
    unit += 1;
  }
  return `${sign}${value.toFixed(2)} ${UNITS[unit]}`;
}

const DESCRIPTIONS: Record<keyof MemoryStats, string> = {
  active: "live buffers (what each is charged)",
  peakActive: "highest active since reset",
  mapped: "memory-mapped files (pages)",
  activeWithMapped: "active + mapped",
  peakActiveWithMapped: "highest active + mapped since reset",
  cache: "freed buffers kept for reuse",
  reserved: "active + cache",
  peakReserved: "highest reserved since reset",
  memoryLimit: "hard limit on active + mapped + quarantined",
  cacheLimit: "cache trimmed to this",
  systemAllocations: "buffers obtained from the system",
  wiredLimit: "wired up to this",
  wired: "kept resident, mapped included",
  wiredMapped: "part of wired that is mapped",
  quarantined: "freed, held for a view moved away",
};

/** Options of {@link formatMemoryStats}. */
export interface FormatMemoryStatsOptions {
  /** A title line above the table. Default: `"nuvec memory summary"`. */
  title?: string;
  /** Show the exact byte counts beside the readable ones. Default: `true`. */
  exactBytes?: boolean;
}

/**
 * An aligned text table of every {@link MemoryStats} field, readable in a terminal, in the spirit of
 * PyTorch's `memory_summary()`: field name, readable size, exact bytes, and what the field means.
 *
 * @throws ArgumentError when `stats` is not an object of finite numbers, or an option has the wrong type.
 */
export function formatMemoryStats(stats: MemoryStats, options: FormatMemoryStatsOptions = {}): string {
  if (typeof stats !== "object" || stats === null) {
    throw new ArgumentError("stats", `stats must be a MemoryStats object, got ${describeValue(stats)}`);
  }
  if (typeof options !== "object" || options === null) {
    throw new ArgumentError("options", `options must be an object, got ${describeValue(options)}`);
  }
  if (options.title !== undefined && typeof options.title !== "string") {
    throw new ArgumentError("title", `title must be a string, got ${describeValue(options.title)}`);
  }
  if (options.exactBytes !== undefined && typeof options.exactBytes !== "boolean") {
    throw new ArgumentError(
      "exactBytes",
      `exactBytes must be a boolean, got ${describeValue(options.exactBytes)}`,
    );
  }
  const title = options.title ?? "nuvec memory summary";
  const exactBytes = options.exactBytes ?? true;
  const rows = MEMORY_STATS_FIELDS.map((field) => {
    const value: unknown = stats[field];
    const readable = formatNamedBytes(value, `stats.${field}`);
    const shown = field === "systemAllocations" ? String(value) : readable;
    return [field, shown, exactBytes ? String(value) : "", DESCRIPTIONS[field]] as const;
  });
  const width = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  const lines = rows.map(([field, readable, exact, description]) => {
    const exactColumn = exactBytes ? `  ${exact.padStart(width[2] ?? 0)}` : "";
    return `| ${field.padEnd(width[0] ?? 0)}  ${readable.padStart(width[1] ?? 0)}${exactColumn}  ${description}`;
  });
  const ruleLength = Math.max(title.length + 2, ...lines.map((line) => line.length));
  const rule = `|${"=".repeat(ruleLength - 1)}`;
  return [rule, `| ${title}`, rule, ...lines, rule].join("\n");
}
