import { describe, expect, it } from "vitest";
import { memoryViewCore } from "./core.js";

const core = memoryViewCore();

describe("the filter by label's list", () => {
  it("lists labels with allocations, most bytes first (ties by definition), at most 200", () => {
    // 250 labels: label k has one allocation of k + 1 bytes; label 3 a second one; -1 and 999 are none.
    const label = [...Array.from({ length: 250 }, (_, k) => k), 3, -1, 999];
    const size = [...Array.from({ length: 250 }, (_, k) => k + 1), 246, 5000, 5000];
    const rows = core.labelSummary(label, size, 250);
    expect(rows.length).toBe(200);
    expect(rows.slice(0, 3)).toEqual([
      { label: 3, count: 2, bytes: 250 },
      { label: 249, count: 1, bytes: 250 },
      { label: 248, count: 1, bytes: 249 },
    ]);
    expect(rows[199]).toEqual({ label: 51, count: 1, bytes: 52 });
    expect(core.labelSummary([-1, -1], [1, 2], 0)).toEqual([]);
  });

  it("shows a label on one line of at most 80 characters, and greys all but the chosen label", () => {
    expect(core.shortLabel("at f (a.js:1:1)\n  at g (b.js:2:2)")).toBe("at f (a.js:1:1) · at g (b.js:2:2)");
    expect(core.shortLabel("x".repeat(100))).toBe(`${"x".repeat(79)}…`);
    expect([...core.dimmedExcept([0, 1, -1, 1], 1)]).toEqual([1, 0, 1, 0]);
  });
});
