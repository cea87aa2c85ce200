import { describe, expect, it } from "vitest";
import { parseArguments, parseBytes, parsePositiveNumber, UsageError } from "./arguments.js";

describe("parseBytes", () => {
  it.each([
    ["4096", 4096],
    ["8GiB", 8 * 1024 ** 3],
    ["512MiB", 512 * 1024 ** 2],
    ["512m", 512 * 1024 ** 2],
    ["1.5g", 1.5 * 1024 ** 3],
    ["64 KiB", 65536],
  ])("reads %s", (text, bytes) => {
    expect(parseBytes(text, "--x")).toBe(bytes);
  });

  it.each([["-1"], ["12 parsecs"], [""], ["1e3"], ["NaN"]])(
    "refuses %s with a UsageError naming the flag",
    (text) => {
      expect(() => parseBytes(text, "--cache-limit")).toThrow(UsageError);
      expect(() => parseBytes(text, "--cache-limit")).toThrow(/--cache-limit/);
    },
  );
});

describe("parseArguments", () => {
  it("reads values, inline values, booleans and positionals", () => {
    const { flags, positionals } = parseArguments(
      ["trace.gz", "--json", "--cache-limit", "1g", "--policy=bounded"],
      {
        values: ["cache-limit", "policy"],
        booleans: ["json"],
      },
    );
    expect(positionals).toEqual(["trace.gz"]);
    expect(Object.fromEntries(flags)).toEqual({ json: "true", "cache-limit": "1g", policy: "bounded" });
  });

  it("refuses unknown flags and missing values", () => {
    expect(() => parseArguments(["--nope"], { values: [], booleans: [] })).toThrow(/unknown flag --nope/);
    expect(() => parseArguments(["--cache-limit"], { values: ["cache-limit"], booleans: [] })).toThrow(
      /needs a value/,
    );
    expect(() => parseArguments(["--json=1"], { values: [], booleans: ["json"] })).toThrow(/takes no value/);
  });

  it("reads positive numbers", () => {
    expect(parsePositiveNumber("1.3", "--reserve-ratio")).toBe(1.3);
    expect(() => parsePositiveNumber("0", "--reserve-ratio")).toThrow(UsageError);
  });
});
