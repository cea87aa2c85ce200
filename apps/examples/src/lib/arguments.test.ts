import { describe, expect, it } from "vitest";
import {
  type FlagSpec,
  helpText,
  parseBytes,
  parseCommandLine,
  parsePositiveNumber,
  UsageError,
} from "./arguments.js";

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

describe("parseCommandLine", () => {
  const specs: FlagSpec[] = [
    { name: "cache-limit", value: "BYTES", help: "a limit", defaultText: "none" },
    { name: "policy", value: "P", help: "a policy" },
    { name: "html", value: "FILE", help: "a report" },
    { name: "json", help: "JSON out", defaultText: "off" },
    { name: "help", short: "h", help: "show this help" },
  ];

  it("reads values, inline values, booleans and positionals", () => {
    const { flags, positionals } = parseCommandLine(
      ["trace.gz", "--json", "--cache-limit", "1g", "--policy=bounded"],
      specs,
    );
    expect(positionals).toEqual(["trace.gz"]);
    expect(Object.fromEntries(flags)).toEqual({ json: "true", "cache-limit": "1g", policy: "bounded" });
  });

  it("keeps everything after the first = of an inline value, and takes -h as --help", () => {
    expect(parseCommandLine(["--html=a=b.html"], specs).flags.get("html")).toBe("a=b.html");
    expect(parseCommandLine(["-h"], specs).flags.has("help")).toBe(true);
  });

  it("refuses unknown flags, missing values and values of booleans, in one line", () => {
    for (const argv of [["--nope"], ["--cache-limit"], ["--json=1"], ["-x"]]) {
      expect(() => parseCommandLine(argv, specs)).toThrow(UsageError);
      expect(() => parseCommandLine(argv, specs)).toThrow(/^[^\n]+$/);
    }
    expect(() => parseCommandLine(["--nope"], specs)).toThrow(/unknown flag '--nope'/);
  });

  it("describes every flag with its default, within 80 columns", () => {
    const text = helpText("x [flags]", "A program. ".repeat(20), specs);
    for (const spec of specs) expect(text).toContain(`--${spec.name}`);
    expect(text).toContain("(default none)");
    expect(text).toContain("(default off)");
    for (const line of text.split("\n")) expect(line.length).toBeLessThanOrEqual(80);
  });

  it("reads positive numbers", () => {
    expect(parsePositiveNumber("1.3", "--reserve-ratio")).toBe(1.3);
    expect(() => parsePositiveNumber("0", "--reserve-ratio")).toThrow(UsageError);
  });
});
