// Tables of memory statistics that fit the terminal: the full table when it fits, without the exact-bytes
// column when not, and the fields that changed between two phases.
import { formatBytes, formatMemoryStats, MEMORY_STATS_FIELDS, type MemoryStats } from "@nuvec/stats";
import { fit } from "./progress.js";

/**
 * The full `MemoryStats` table, without its exact-bytes column if that would pass `columns`; the title cut to
 * fit.
 */
export function statsTable(stats: MemoryStats, title: string, columns = 80): string {
  // A long title (a trace's name) is cut, so it never widens the table past the terminal.
  title = fit(title, columns - 4);
  const full = formatMemoryStats(stats, { title });
  if (full.split("\n").every((line) => line.length <= columns)) return full;
  return formatMemoryStats(stats, { title, exactBytes: false });
}

/** One field's value as people read it. */
function readable(field: keyof MemoryStats, value: number): string {
  return field === "systemAllocations" ? String(value) : formatBytes(value);
}

/**
 * The fields that changed from `before` to `after`, one per line (`  mapped  0 B → 30.01 MiB`), or a line
 * saying nothing changed.
 */
export function statsChanges(before: MemoryStats, after: MemoryStats): string[] {
  const changed = MEMORY_STATS_FIELDS.filter((field) => before[field] !== after[field]);
  if (changed.length === 0) return ["  (no statistic changed)"];
  const width = Math.max(...changed.map((field) => field.length));
  const from = Math.max(...changed.map((field) => readable(field, before[field]).length));
  return changed.map(
    (field) =>
      `  ${field.padEnd(width)}  ${readable(field, before[field]).padStart(from)} → ${readable(field, after[field])}`,
  );
}
