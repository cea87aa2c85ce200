import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../test/bad-byte-counts.js";
import { ArgumentError } from "./errors.js";
import { allocationSize, assertByteCount, byteCountProblem, mappingSize, PAGE, SMALL } from "./size.js";

describe("allocationSize", () => {
  it.each([
    [0, 0],
    [1, 256],
    [255, 256],
    [256, 256],
    [257, 512],
    [16383, 16384],
    [16384, 16384],
    [16385, 32768],
    [32769, 49152],
    [2 ** 30 + 1, 2 ** 30 + PAGE],
    // Both sides of 2^31: the integer form covers lengths up to 2^31 - PAGE, the general form the rest.
    [2 ** 31 - PAGE - 1, 2 ** 31 - PAGE],
    [2 ** 31 - PAGE, 2 ** 31 - PAGE],
    [2 ** 31 - PAGE + 1, 2 ** 31],
    [2 ** 31, 2 ** 31],
    [2 ** 31 + 1, 2 ** 31 + PAGE],
    [-0, 0],
  ])("rounds %d to %d as the seed does", (length, expected) => {
    expect(allocationSize(length)).toBe(expected);
  });

  it("returns undefined when the size class is beyond Number.MAX_SAFE_INTEGER (the seed's None)", () => {
    expect(allocationSize(Number.MAX_SAFE_INTEGER)).toBeUndefined();
    const largestPageMultiple = Math.floor(Number.MAX_SAFE_INTEGER / PAGE) * PAGE;
    expect(allocationSize(largestPageMultiple)).toBe(largestPageMultiple);
    expect(allocationSize(largestPageMultiple + 1)).toBeUndefined();
  });

  it.each([
    [-1, /length.*-1/],
    [1.5, /length.*1\.5/],
    [Number.NaN, /length.*NaN/],
    [Number.POSITIVE_INFINITY, /length.*Infinity/],
    [Number.NEGATIVE_INFINITY, /length.*-Infinity/],
    [2 ** 53, /length/],
  ])("throws for %s", (length, message) => {
    expect(() => allocationSize(length)).toThrow(ArgumentError);
    expect(() => allocationSize(length)).toThrow(message);
  });

  it.each([["12"], [12n], [undefined], [null], [{}]])(
    "throws an ArgumentError naming the value %s",
    (value) => {
      expect(() => allocationSize(value as unknown as number)).toThrow(ArgumentError);
      expect(() => allocationSize(value as unknown as number)).toThrow(/length must be a number/);
    },
  );

  const lengths = fc.oneof(
    fc.integer({ min: 0, max: 4 * PAGE }),
    fc.integer({ min: 0, max: 2 ** 40 }),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - PAGE }),
  );

  it("is the smallest multiple of its granule (256 bytes up to a page, whole pages beyond) at least the length; idempotent and monotone", () => {
    fc.assert(
      fc.property(lengths, lengths, (length, other) => {
        const size = allocationSize(length) as number;
        const granule = length > PAGE ? PAGE : SMALL;
        expect(size).toBeGreaterThanOrEqual(length);
        expect(size % granule).toBe(0);
        expect(size - length).toBeLessThan(granule);
        if (length <= PAGE) expect(size).toBeLessThanOrEqual(PAGE);
        expect(allocationSize(size)).toBe(size);
        const [low, high] = length <= other ? [length, other] : [other, length];
        expect(allocationSize(low) as number).toBeLessThanOrEqual(allocationSize(high) as number);
      }),
    );
  });
});

describe("mappingSize", () => {
  it.each([
    [0, 4096, 0],
    [1, 4096, 4096],
    [4096, 4096, 4096],
    [4097, 4096, 8192],
    [1, 16384, 16384],
    [16384, 16384, 16384],
    [16385, 16384, 32768],
    [100_000, 16384, 114688],
    [100_000, 4096, 102400],
  ])("maps %d bytes with %d-byte pages to %d", (length, pageSize, expected) => {
    expect(mappingSize(length, pageSize)).toBe(expected);
  });

  it("uses 16 KiB pages by default", () => {
    expect(mappingSize(1)).toBe(PAGE);
  });

  it("rounds up to whole pages, the smallest such multiple", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 45 }),
        fc.constantFrom(4096, 16384, 65536),
        (length, page) => {
          const size = mappingSize(length, page) as number;
          expect(size % page).toBe(0);
          expect(size).toBeGreaterThanOrEqual(length);
          expect(size - length).toBeLessThan(page);
        },
      ),
    );
  });

  it("returns undefined beyond Number.MAX_SAFE_INTEGER", () => {
    expect(mappingSize(Number.MAX_SAFE_INTEGER, 4096)).toBeUndefined();
  });

  it.each([[0], [3], [4095], [-4096], [1.5], [Number.NaN], [2 ** 31]])("refuses page size %s", (pageSize) => {
    expect(() => mappingSize(1, pageSize)).toThrow(/pageSize/);
  });

  it("refuses a bad length", () => {
    expect(() => mappingSize(-1)).toThrow(ArgumentError);
    expect(() => mappingSize(Number.NaN, 4096)).toThrow(/length/);
  });
});

describe("assertByteCount", () => {
  it.each(BAD_BYTE_COUNTS)(
    "refuses %s with ArgumentError and byteCountProblem's message",
    (_label, value) => {
      const problem = byteCountProblem(value, "bytes");
      expect(problem?.message).toMatch(
        /^bytes must be a (number of bytes|non-negative safe integer number of bytes), got /,
      );
      expect(() => assertByteCount(value, "bytes")).toThrow(
        expect.objectContaining({ name: "ArgumentError", argument: "bytes", message: problem?.message }),
      );
    },
  );

  it("names the argument", () => {
    expect(() => assertByteCount(-5, "bytes")).toThrow(/bytes.*-5/);
    expect(() => assertByteCount("5", "limit")).toThrow(/limit must be a number.*"5"/);
    expect(() => assertByteCount(12n, "size")).toThrow(/12n/);
  });
  it("accepts safe non-negative integers", () => {
    expect(() => assertByteCount(0, "x")).not.toThrow();
    expect(() => assertByteCount(Number.MAX_SAFE_INTEGER, "x")).not.toThrow();
  });
});
