// Every function @nuvec/stats exports, given bad input, throws the project's ArgumentError (code
// ERR_NUVEC_INVALID_ARGUMENT, `argument` naming what was wrong): never a plain TypeError or RangeError. The
// table must name every exported function, so a new export cannot slip past it.
import { describe, expect, it } from "vitest";
import { thrown as thrownBy } from "../test/thrown.js";
import * as stats from "./index.js";

const { ArgumentError, NuvecError, emptyMemoryStats } = stats;

type Call = readonly [label: string, argument: string, call: () => unknown];

const BAD_CALLS: Readonly<Record<string, readonly Call[]>> = {
  allocationSize: [
    ["allocationSize(-1)", "length", () => stats.allocationSize(-1)],
    ['allocationSize("1")', "length", () => stats.allocationSize("1" as never)],
    ["allocationSize(NaN)", "length", () => stats.allocationSize(Number.NaN)],
  ],
  mappingSize: [
    ["mappingSize(1.5)", "length", () => stats.mappingSize(1.5)],
    ["mappingSize(1, 3)", "pageSize", () => stats.mappingSize(1, 3)],
    ["mappingSize(1, 2**31)", "pageSize", () => stats.mappingSize(1, 2 ** 31)],
    ["mappingSize(1, 1n)", "pageSize", () => stats.mappingSize(1, 1n as never)],
  ],
  assertByteCount: [
    ['assertByteCount(-1, "bytes")', "bytes", () => stats.assertByteCount(-1, "bytes")],
    ['assertByteCount(null, "limit")', "limit", () => stats.assertByteCount(null, "limit")],
  ],
  formatBytes: [
    ["formatBytes(NaN)", "bytes", () => stats.formatBytes(Number.NaN)],
    ['formatBytes("1")', "bytes", () => stats.formatBytes("1" as never)],
    ["formatBytes(Infinity)", "bytes", () => stats.formatBytes(Number.POSITIVE_INFINITY)],
  ],
  formatMemoryStats: [
    ["formatMemoryStats(null)", "stats", () => stats.formatMemoryStats(null as never)],
    [
      "formatMemoryStats({ active: NaN })",
      "stats.active",
      () => stats.formatMemoryStats({ ...emptyMemoryStats(), active: Number.NaN }),
    ],
    [
      "formatMemoryStats(stats without systemAllocations)",
      "stats.systemAllocations",
      () => stats.formatMemoryStats({ ...emptyMemoryStats(), systemAllocations: undefined as never }),
    ],
    [
      "formatMemoryStats(stats, { title: 1 })",
      "title",
      () => stats.formatMemoryStats(emptyMemoryStats(), { title: 1 as never }),
    ],
    [
      'formatMemoryStats(stats, { exactBytes: "no" })',
      "exactBytes",
      () => stats.formatMemoryStats(emptyMemoryStats(), { exactBytes: "no" as never }),
    ],
    [
      "formatMemoryStats(stats, null)",
      "options",
      () => stats.formatMemoryStats(emptyMemoryStats(), null as never),
    ],
  ],
  optionsSchema: [
    ['optionsSchema("f()", {}).parse({ x: 1 })', "x", () => stats.optionsSchema("f()", {}).parse({ x: 1 })],
  ],
  checkArgument: [
    [
      'checkArgument(rules.boolean, 1, "flag", "f()")',
      "flag",
      () => stats.checkArgument(stats.rules.boolean, 1, "flag", "f()"),
    ],
  ],
  printable: [
    ["printable(1)", "text", () => stats.printable(1 as never)],
    ['printable("a", -1)', "width", () => stats.printable("a", -1)],
    ['printable("a", 1.5)', "width", () => stats.printable("a", 1.5)],
    ['printable("a", 2, "yes")', "fromStart", () => stats.printable("a", 2, "yes" as never)],
  ],
  Teardown: [["new Teardown().run(1)", "step", () => new stats.Teardown().run(1 as never)]],
  // Functions that take no argument a caller can get wrong, or report a problem instead of throwing.
  byteCountProblem: [],
  describeValue: [],
  emptyMemoryStats: [],
};

describe("@nuvec/stats refuses bad input with the project's ArgumentError", () => {
  it("names every exported function in the table", () => {
    const functions = Object.entries(stats)
      .filter(
        ([, value]) => typeof value === "function" && !(value.prototype instanceof Error) && value !== Error,
      )
      .filter(([name]) => !/Error$/.test(name))
      .map(([name]) => name)
      .sort();
    expect(Object.keys(BAD_CALLS).sort()).toEqual(functions);
  });

  const cases = Object.values(BAD_CALLS).flat();
  it.each(cases)("%s throws ArgumentError naming %s", (_label, argument, call) => {
    const thrown = thrownBy(call);
    expect(thrown).toBeInstanceOf(NuvecError);
    expect(thrown).toBeInstanceOf(ArgumentError);
    expect(thrown).not.toBeInstanceOf(TypeError);
    expect(thrown).not.toBeInstanceOf(RangeError);
    expect((thrown as InstanceType<typeof ArgumentError>).code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    expect((thrown as InstanceType<typeof ArgumentError>).argument).toBe(argument);
    expect((thrown as Error).message).toContain(argument);
  });

  it("byteCountProblem reports (never throws), and its message is the one assertByteCount throws", () => {
    const problem = stats.byteCountProblem(-1, "bytes");
    expect(problem?.kind).toBe("range");
    expect(() => stats.assertByteCount(-1, "bytes")).toThrow(problem?.message ?? "");
  });
});
