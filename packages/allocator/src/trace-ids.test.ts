// Long traces: any id a trace can hold, and any number of ids, with memory bounded by what is live. A Map or
// Set holds at most 2^24 entries; the validator and the replay keep their ids in structures without that limit.
import { FormatError } from "@nuvec/stats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { replayTrace } from "./replay.js";
import type { TraceEvent } from "./trace-format.js";
import { TraceIdMap, UsedTraceIds } from "./trace-ids.js";
import { TraceValidator } from "./trace-validator.js";

describe("TraceValidator past 2^24 ids", () => {
  it("checks 2^24 + 16 allocations and frees of ids from 2^26 up, and still refuses a reused id", () => {
    const validator = new TraceValidator();
    const base = 2 ** 26;
    const count = 2 ** 24 + 16;
    for (let offset = 0; offset < count; offset += 1) {
      validator.check(["a", base + offset, 1]);
      validator.check(["f", base + offset]);
    }
    expect(validator.events).toBe(2 * count);
    const reuse = () => validator.check(["a", base + 12_345_678, 1]);
    expect(reuse).toThrow(FormatError);
    expect(reuse).toThrow(/trace event 33554464 .*already allocated/);
    expect(() => validator.check(["f", base + count])).toThrow(/never allocated/);
  }, 300_000);

  it("takes the largest id a trace can hold, and refuses one past it with the trace-format error", () => {
    const largest = Number.MAX_SAFE_INTEGER;
    const result = replayTrace([
      ["a", largest, 100],
      ["a", 0, 100],
      ["f", largest],
      ["m", largest, 4096],
      ["u", largest],
    ]);
    expect(result.stats).toMatchObject({ active: 256, cache: 256, mapped: 0 });
    expect(() => replayTrace([["a", 2 ** 53, 1] as unknown as TraceEvent])).toThrow(
      expect.objectContaining({ code: "ERR_NUVEC_TRACE_EVENT" }),
    );
  });
});

describe("TraceIdMap", () => {
  it("spreads entries over as many Maps as it needs, and finds, replaces and deletes across them", () => {
    const map = new TraceIdMap<number | null>(4);
    for (let id = 0; id < 10; id += 1) map.set(id * 1000, id === 3 ? null : id);
    expect([map.size, map.get(3000), map.has(3000), map.get(9000)]).toEqual([10, null, true, 9]);
    map.set(9000, 90);
    expect([map.get(9000), map.size]).toEqual([90, 10]);
    for (let id = 0; id < 8; id += 1) expect(map.delete(id * 1000)).toBe(true);
    expect([map.delete(0), map.size, map.get(0)]).toEqual([false, 2, undefined]);
    expect([...map.values()].sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([8, 90]);
  });

  it("agrees with a Map on any sequence of sets and deletes (parts of 3 entries)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 40 }), fc.integer()), { maxLength: 200 }),
        (steps) => {
          const map = new TraceIdMap<number>(3);
          const model = new Map<number, number>();
          for (const [isSet, id, value] of steps) {
            if (isSet) {
              map.set(id, value);
              model.set(id, value);
            } else expect(map.delete(id)).toBe(model.delete(id));
            expect(map.size).toBe(model.size);
            expect(map.get(id)).toBe(model.get(id));
          }
          for (let id = 0; id <= 40; id += 1) expect(map.has(id)).toBe(model.has(id));
        },
      ),
    );
  });
});

describe("UsedTraceIds", () => {
  it("holds ids given out in order as one interval, nothing per id", () => {
    const used = new UsedTraceIds();
    for (let id = 5; id < 100_000; id += 1) used.add(id);
    expect(used.outside).toBe(0);
    expect([4, 5, 99_999, 100_000].map((id) => used.has(id))).toEqual([false, true, true, false]);
    for (let id = 4; id >= 0; id -= 1) used.add(id);
    expect([used.outside, used.has(0)]).toEqual([0, true]);
  });

  it("takes ids out of order back into the interval when it reaches them", () => {
    const used = new UsedTraceIds();
    for (const id of [10, 13, 12, 2 ** 50]) used.add(id);
    expect(used.outside).toBe(3);
    used.add(11);
    expect(used.outside).toBe(1);
    expect([13, 2 ** 50, 2 ** 50 + 1].map((id) => used.has(id))).toEqual([true, true, false]);
  });

  it("agrees with a Set on any ids", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(0, 1023, 1024, 2 ** 53 - 1, 2 ** 40)),
          { maxLength: 300 },
        ),
        (ids) => {
          const used = new UsedTraceIds();
          const model = new Set<number>();
          for (const id of ids) {
            expect(used.has(id)).toBe(model.has(id));
            if (!model.has(id)) {
              used.add(id);
              model.add(id);
            }
          }
          for (const id of [...ids, 0, 1, 1024, 3001, 2 ** 53 - 1]) expect(used.has(id)).toBe(model.has(id));
        },
      ),
    );
  });
});

describe("TraceValidator against a naive model of id histories", () => {
  /** Each id's state in a plain Map: what the validator must accept and refuse, whatever its structures. */
  function modelCheck(states: Map<number, string>, event: readonly [string, number]): boolean {
    const [tag, id] = event;
    const state = states.get(id);
    if (tag === "a") {
      if (state !== undefined) return false;
      states.set(id, "live");
    } else if (tag === "f" || tag === "q") {
      if (state !== "live") return false;
      states.set(id, tag === "f" ? "released" : "quarantined");
    } else {
      if (state !== "quarantined") return false;
      states.set(id, "released");
    }
    return true;
  }

  it("accepts and refuses as the model does, across the window's slides and far ids", () => {
    const id = fc.oneof(
      fc.integer({ min: 0, max: 300_000 }),
      fc.integer({ min: 0, max: 50 }),
      fc.constantFrom(2 ** 20, 2 ** 40, Number.MAX_SAFE_INTEGER),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("a", "a", "f", "q", "r"), id), { maxLength: 400 }),
        (events) => {
          const validator = new TraceValidator();
          const states = new Map<number, string>();
          for (const event of events) {
            const accepted = modelCheck(states, event);
            const check = () => validator.check([...event, ...(event[0] === "a" ? [1] : [])]);
            if (accepted) expect(check).not.toThrow();
            else expect(check).toThrow(FormatError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("keeps a long-lived id and a quarantined one across many slides of the window", () => {
    const validator = new TraceValidator();
    validator.check(["a", 0, 1]);
    validator.check(["a", 1, 1]);
    validator.check(["q", 1]);
    for (let id = 2; id < 500_000; id += 1) {
      validator.check(["a", id, 1]);
      if (id >= 12) validator.check(["f", id - 10]);
    }
    expect(() => validator.check(["a", 0, 1])).toThrow(/already allocated/);
    expect(() => validator.check(["f", 5])).toThrow(/already freed/);
    validator.check(["r", 1]);
    validator.check(["f", 0]);
    expect(() => validator.check(["f", 0])).toThrow(/already freed/);
    validator.check(["f", 499_995]);
  });
});
