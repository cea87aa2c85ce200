import { describe, expect, it } from "vitest";
import { TraceValidator } from "./trace-validator.js";

describe("TraceValidator.acceptAllocation and acceptFree", () => {
  it("accept what check accepts and count it as an event", () => {
    const validator = new TraceValidator();
    expect(validator.acceptAllocation(0, 100)).toBe(true);
    expect(validator.acceptAllocation(1, 0)).toBe(true);
    expect(validator.acceptFree(0)).toBe(true);
    expect(validator.events).toBe(3);
    // The history they recorded is check's: id 0 is released, id 1 live.
    expect(() => validator.check(["f", 0])).toThrow('trace event 3 (["f",0]): this id was already freed');
    expect(validator.check(["f", 1])).toEqual(["f", 1]);
    expect(validator.events).toBe(4);
  });

  it("refuse what check refuses, recording nothing, so check gives the reason", () => {
    const validator = new TraceValidator();
    expect(validator.acceptAllocation(0, 64)).toBe(true);
    for (const [id, bytes] of [
      [0, 64], // reused id
      [-1, 64],
      [1.5, 64],
      ["1", 64],
      [1, -1],
      [1, Number.MAX_SAFE_INTEGER + 1],
      [1, "64"],
    ] as [unknown, unknown][]) {
      expect(validator.acceptAllocation(id, bytes)).toBe(false);
    }
    for (const id of [1, -1, 0.5, "0", null]) expect(validator.acceptFree(id)).toBe(false);
    expect(validator.events).toBe(1);
    expect(() => validator.check(["a", 0, 64])).toThrow(
      'trace event 1 (["a",0,64]): this id was already allocated',
    );
    expect(() => validator.check(["f", 1])).toThrow('trace event 1 (["f",1]): free of an id never allocated');
    expect(validator.acceptFree(0)).toBe(true);
    expect(validator.acceptFree(0)).toBe(false);
    expect(validator.events).toBe(2);
  });
});
