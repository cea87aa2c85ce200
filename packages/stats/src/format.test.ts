import { describe, expect, it } from "vitest";
import { formatBytes, formatMemoryStats } from "./format.js";
import { emptyMemoryStats, MEMORY_STATS_FIELDS } from "./memory-stats.js";

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1, "1 B"],
    [1023, "1023 B"],
    [1024, "1.00 KiB"],
    [1536, "1.50 KiB"],
    [1610612736, "1.50 GiB"],
    [16 * 1024 ** 4, "16.00 TiB"],
    [1024 * 1024 - 1, "1.00 MiB"],
    [-2048, "-2.00 KiB"],
    [Number.MAX_SAFE_INTEGER, "8.00 PiB"],
  ])("formats %d as %s", (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe("formatMemoryStats", () => {
  const stats = {
    ...emptyMemoryStats(),
    active: 1610612736,
    peakActive: 2 * 1024 ** 3,
    cache: 512,
    systemAllocations: 42,
    memoryLimit: 12 * 1024 ** 3,
  };

  it("has one aligned row per field, with readable and exact bytes", () => {
    const text = formatMemoryStats(stats);
    const lines = text.split("\n");
    for (const field of MEMORY_STATS_FIELDS) {
      expect(lines.filter((line) => line.startsWith(`| ${field} `))).toHaveLength(1);
    }
    expect(text).toContain("1.50 GiB");
    expect(text).toContain("1610612736");
    expect(text).toMatch(/systemAllocations\s+42\s+42/);
    const rows = lines.filter((line) => MEMORY_STATS_FIELDS.some((field) => line.startsWith(`| ${field} `)));
    // The exact-bytes column is right-aligned: every row's number ends at the same column.
    const exactEnds = rows.map((row) => row.match(/^.*?\d+(?= {2}[a-z])/)?.[0].length);
    expect(exactEnds.every((end) => end !== undefined && end === exactEnds[0])).toBe(true);
  });

  it("takes a title and can hide exact bytes", () => {
    const text = formatMemoryStats(stats, { title: "after loading", exactBytes: false });
    expect(text).toContain("| after loading");
    expect(text).not.toContain("1610612736");
  });
});

describe("emptyMemoryStats", () => {
  it("has every field at zero", () => {
    const stats = emptyMemoryStats();
    expect(Object.keys(stats).sort()).toEqual([...MEMORY_STATS_FIELDS].sort());
    expect(Object.values(stats).every((value) => value === 0)).toBe(true);
    expect(MEMORY_STATS_FIELDS).toHaveLength(15);
  });
});
