// The caching allocator's refused requests (each a typed error that changes no counter) and close. Apart
// from the working calls (allocator.test.ts, allocator-settings.test.ts): these are what it will not do.
import { ArgumentError, PAGE } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import { setup } from "../test/mlx-setup.js";
import { figures, refusal, thrown } from "../test/support.js";

describe("refused requests throw typed errors and change no counter", () => {
  // The message of each refusal is @nuvec/stats' byteCountProblem (size.test.ts).
  it.each(BAD_BYTE_COUNTS)("malloc(%s) is an ArgumentError", (_name, value) => {
    const { allocator } = setup();
    allocator.free(allocator.malloc(100));
    const before = figures(allocator);
    const error = thrown(() => allocator.malloc(value as number));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "bytes" });
    expect(figures(allocator)).toEqual(before);
  });

  it("a size class beyond Number.MAX_SAFE_INTEGER is an argument error", () => {
    const { allocator } = setup({ maxBufferLength: Number.MAX_SAFE_INTEGER });
    expect(() => allocator.malloc(Number.MAX_SAFE_INTEGER)).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_BUFFER_TOO_LARGE"),
    );
  });

  it("bad limits and mapping lengths are argument errors", () => {
    const { allocator } = setup();
    const before = figures(allocator);
    expect(() => allocator.setMemoryLimit(-1)).toThrow(ArgumentError);
    expect(() => allocator.setCacheLimit(0.5)).toThrow(ArgumentError);
    expect(() => allocator.addMapping(Number.NaN)).toThrow(ArgumentError);
    expect(figures(allocator)).toEqual(before);
  });

  it("a double free is a StateError, even after the buffer went to another allocation", () => {
    const { allocator } = setup();
    const first = allocator.malloc(100);
    allocator.free(first);
    const before = figures(allocator);
    expect(() => allocator.free(first)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    expect(figures(allocator)).toEqual(before);
    const second = allocator.malloc(100); // the same buffer, now someone else's
    expect(second.buffer).toBe(first.buffer);
    expect(() => allocator.free(first)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    expect(allocator.memoryStats().active).toBe(256);
    allocator.free(second);
  });

  it("an allocation or mapping of another allocator, or a look-alike, is an ArgumentError", () => {
    const { allocator } = setup();
    const other = setup().allocator;
    allocator.malloc(100);
    const before = figures(allocator);
    const error = thrown(() => allocator.free(other.malloc(100)));
    expect(error).toMatchObject({ name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_ALLOCATION" });
    expect(() => allocator.free({ buffer: undefined, allocatedLength: 0, length: 0 })).toThrow(ArgumentError);
    expect(() => allocator.removeMapping(other.addMapping(1))).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_FOREIGN_ALLOCATION"),
    );
    expect(() => allocator.removeMapping({ length: 1, allocatedLength: PAGE })).toThrow(ArgumentError);
    expect(figures(allocator)).toEqual(before);
  });
});

describe("close", () => {
  it("releases every cached buffer, leaves live ones to the caller, then refuses every call", () => {
    const { source, allocator } = setup();
    const live = allocator.malloc(100);
    allocator.free(allocator.malloc(1000));
    allocator.close();
    expect(source.released).toHaveLength(1);
    expect(source.held.has(live.buffer!)).toBe(true);
    const calls: [string, () => unknown][] = [
      ["malloc", () => allocator.malloc(1)],
      ["malloc(0)", () => allocator.malloc(0)],
      ["free", () => allocator.free(live)],
      ["addMapping", () => allocator.addMapping(1)],
      ["memoryStats", () => allocator.memoryStats()],
      ["counters", () => allocator.counters()],
      ["resetPeak", () => allocator.resetPeak()],
      ["setMemoryLimit", () => allocator.setMemoryLimit(1)],
      ["setCacheLimit", () => allocator.setCacheLimit(1)],
      ["clearCache", () => allocator.clearCache()],
    ];
    for (const [, call] of calls) expect(call).toThrow(refusal("StateError", "ERR_NUVEC_ALLOCATOR_CLOSED"));
    expect(() => allocator.close()).not.toThrow(); // closing twice does nothing
  });
});
