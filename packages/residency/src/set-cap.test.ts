import { afterEach, describe, expect, it, vi } from "vitest";
import { FakeBackend } from "../test/fake-backend.js";
import { Residency } from "./residency.js";
import {
  DEFAULT_MAX_PERCENT_PER_SET,
  MAX_PERCENT_PER_SET_VARIABLE,
  MIN_RESIDENCY_SET_BYTES,
  maxPercentPerSet,
  maxPercentPerSetFromEnvironment,
  residencySetCap,
} from "./set-cap.js";

const GiB = 1024 ** 3;

describe("maxPercentPerSet (the seed's `v.trim().parse::<i64>()`)", () => {
  it.each([
    [undefined, 5],
    [null, 5],
    ["", 5],
    ["   ", 5],
    [" 7 ", 7],
    ["\t3\n", 3],
    ["abc", 5],
    ["0", 0],
    ["-0", 0],
    ["-3", 0],
    ["1", 1],
    ["99", 99],
    ["100", 0],
    ["250", 0],
    ["+7", 7],
    ["07", 7],
    ["+", 5],
    ["-", 5],
    ["1e2", 5],
    ["5.5", 5],
    ["0x10", 5],
    ["1 2", 5],
    ["7%", 5],
    ["\uFF17", 5], // a full-width 7: not an ASCII digit for Rust
    ["\u00857\u0085", 7], // NEL is White_Space for Rust's trim (JavaScript's trim keeps it)
    ["\uFEFF7", 5], // the byte-order mark is not White_Space for Rust (JavaScript's trim removes it)
    ["\u30007\u3000", 7],
    ["9223372036854775807", 0], // i64::MAX parses: ≥ 100, one set
    ["9223372036854775808", 5], // overflows i64: unparsable, the default
    ["-9223372036854775808", 0], // i64::MIN parses: negative, one set
    ["-9223372036854775809", 5],
  ])("%j gives %i", (text, expected) => {
    expect(maxPercentPerSet(text)).toBe(expected);
  });

  it("defaults to 5", () => {
    expect(DEFAULT_MAX_PERCENT_PER_SET).toBe(5);
  });
});

describe("residencySetCap", () => {
  it("is 5% of the working set by default", () => {
    expect(residencySetCap(64 * GiB, undefined)).toBe(Math.floor((64 * GiB) / 100) * 5);
    expect(residencySetCap(64 * GiB, undefined)).toBe(3_435_973_835);
    expect(residencySetCap(8 * GiB, "2")).toBe(171_798_690);
  });

  it("divides by 100 before multiplying, as the seed does", () => {
    expect(residencySetCap(1_000_000_099, "7")).toBe(70_000_000); // not 70_000_006
    expect(residencySetCap(9_999_999_999, "99")).toBe(99_999_999 * 99);
  });

  it("never goes below 64 MiB", () => {
    expect(MIN_RESIDENCY_SET_BYTES).toBe(64 * 1024 * 1024);
    expect(residencySetCap(4 * GiB, "1")).toBe(MIN_RESIDENCY_SET_BYTES);
    expect(residencySetCap(0, undefined)).toBe(MIN_RESIDENCY_SET_BYTES);
  });

  it.each([["0"], ["-3"], ["100"], ["1000"]])("is 0 (one set) for %j", (text) => {
    expect(residencySetCap(64 * GiB, text)).toBe(0);
  });

  it("is exact for the largest safe working set", () => {
    const workingSet = Number.MAX_SAFE_INTEGER;
    expect(residencySetCap(workingSet, "99")).toBe(Number((BigInt(workingSet) / 100n) * 99n));
  });
});

describe("the environment variable", () => {
  const saved = process.env[MAX_PERCENT_PER_SET_VARIABLE];
  afterEach(() => {
    if (saved === undefined) delete process.env[MAX_PERCENT_PER_SET_VARIABLE];
    else process.env[MAX_PERCENT_PER_SET_VARIABLE] = saved;
    vi.unstubAllGlobals();
  });

  it("is MLX's name", () => {
    expect(MAX_PERCENT_PER_SET_VARIABLE).toBe("MLX_RESIDENCY_SET_MAX_PCT");
  });

  // [the variable (undefined: unset), the option (absent: left out), the cap of a 64 GiB working set].
  it.each([
    [" 2 ", "absent", Math.floor((64 * GiB) / 100) * 2],
    ["0", undefined, 0],
    [undefined, "absent", 3_435_973_835],
    ["0", "1", Math.floor((64 * GiB) / 100)],
    ["0", null, 3_435_973_835],
  ] as const)(
    "%j with the option %j gives a cap of %i (read when the option is left out, null means unset)",
    (variable, option, cap) => {
      if (variable === undefined) delete process.env[MAX_PERCENT_PER_SET_VARIABLE];
      else process.env[MAX_PERCENT_PER_SET_VARIABLE] = variable;
      expect(maxPercentPerSetFromEnvironment()).toBe(variable);
      const options =
        option === "absent" ? { workingSet: 64 * GiB } : { workingSet: 64 * GiB, maxPercentPerSet: option };
      expect(new Residency(new FakeBackend(), options).maxBytesPerSet).toBe(cap);
    },
  );

  it("is undefined where there is no process, and when reading it throws", () => {
    vi.stubGlobal("process", undefined);
    const withoutProcess = maxPercentPerSetFromEnvironment();
    vi.stubGlobal("process", {
      env: new Proxy(
        {},
        {
          get() {
            throw new Error("no permission to read the environment");
          },
        },
      ),
    });
    const whenThrowing = maxPercentPerSetFromEnvironment();
    vi.unstubAllGlobals();
    expect(withoutProcess).toBeUndefined();
    expect(whenThrowing).toBeUndefined();
  });
});
