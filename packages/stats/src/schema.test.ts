import { describe, expect, expectTypeOf, it } from "vitest";
import { thrown } from "../test/thrown.js";
import { ArgumentError } from "./errors.js";
import { checkArgument, optionsSchema, rules, type SchemaType } from "./schema.js";

const { boolean, byteCount, func, number, oneOf, optional, string, thenable } = rules;

const schema = optionsSchema("Thing.open()", {
  size: byteCount(),
  limit: optional(byteCount({ maximum: 100 })),
  mode: optional(oneOf(["fast", "slow"] as const)),
  ratio: optional(number({ minimum: 1 })),
  verbose: optional(boolean),
  name: optional(string()),
  onDone: optional(func<(value: number) => void>()),
  after: optional(thenable),
  nested: optional(optionsSchema("Thing.open()", { depth: optional(byteCount()) })),
});

interface ThingOptions {
  size: number;
  limit?: number;
  mode?: "fast" | "slow";
  ratio?: number;
  verbose?: boolean;
  name?: string;
  onDone?: (value: number) => void;
  after?: PromiseLike<unknown>;
  nested?: { depth?: number };
}

function refusal(call: () => unknown): ArgumentError {
  const error = thrown(call);
  expect(error).toBeInstanceOf(ArgumentError);
  return error as ArgumentError;
}

describe("optionsSchema", () => {
  it("infers the options type the declaration accepts", () => {
    expectTypeOf<SchemaType<typeof schema.fields>>().toEqualTypeOf<ThingOptions>();
  });

  it("returns the options given, -0 read as 0", () => {
    expect(schema.parse({ size: -0, limit: 5, mode: "fast", nested: { depth: 2 } })).toEqual({
      size: 0,
      limit: 5,
      mode: "fast",
      nested: { depth: 2 },
    });
    expect(Object.is(schema.parse({ size: -0 }).size, 0)).toBe(true);
  });

  it.each([
    [{ size: 1, verbose: 1 }, "verbose", "Thing.open(): verbose must be a boolean, got 1"],
    [{ size: "1" }, "size", 'Thing.open(): size must be a number of bytes, got string "1"'],
    [{}, "size", "Thing.open(): size must be a number of bytes, got undefined"],
    [{ size: 1, limit: 101 }, "limit", "Thing.open(): limit must be at most 100, got 101"],
    [{ size: 1, mode: "medium" }, "mode", 'Thing.open(): mode must be "fast" or "slow", got "medium"'],
    [{ size: 1, ratio: Number.NaN }, "ratio", "Thing.open(): ratio must be a finite number ≥ 1, got NaN"],
    [{ size: 1, name: "" }, "name", 'Thing.open(): name must be a non-empty string, got ""'],
    [
      { size: 1, after: {} },
      "after",
      "Thing.open(): after must be a promise (a thenable), got [object Object]",
    ],
    [
      { size: 1, nested: { depth: -1 } },
      "nested.depth",
      "Thing.open(): nested.depth must be a non-negative safe integer number of bytes, got -1",
    ],
    [
      { size: 1, nested: { deep: 1 } },
      "nested.deep",
      "Thing.open(): unknown option nested.deep (the options are depth)",
    ],
    [
      { size: 1, colour: "red" },
      "colour",
      "Thing.open(): unknown option colour (the options are size, limit, mode, ratio, verbose, name, onDone, after, nested)",
    ],
    [null, "options", "Thing.open(): options must be an object, got null"],
    [[1], "options", "Thing.open(): options must be an object, got [object Array]"],
  ])("refuses %j naming %s", (options, argument, message) => {
    const error = refusal(() => schema.parse(options));
    expect(error.argument).toBe(argument);
    expect(error.code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    expect(error.message).toBe(message);
  });

  it("reads each option once; a getter that throws is an ArgumentError naming it", () => {
    let reads = 0;
    const options = {
      get size() {
        reads += 1;
        return 4;
      },
    };
    expect(schema.parse(options)).toEqual({ size: 4 });
    expect(reads).toBe(1);
    const error = refusal(() =>
      schema.parse({
        size: 1,
        get verbose(): boolean {
          throw new Error("getter");
        },
      }),
    );
    expect(error.argument).toBe("verbose");
    expect((error.cause as Error).message).toBe("getter");
  });
});

describe("where options come from", () => {
  it("checks options in declaration order, whatever order they are given in", () => {
    expect(refusal(() => schema.parse({ verbose: 1, size: "1" })).argument).toBe("size");
    expect(refusal(() => schema.parse({ verbose: 1 })).argument).toBe("size");
    expect(Object.keys(schema.parse({ nested: {}, mode: "fast", size: 1 }))).toEqual([
      "size",
      "mode",
      "nested",
    ]);
  });

  it("a plain object's options are its own properties: what Object.prototype holds is none", () => {
    const prototype = Object.prototype as Record<string, unknown>;
    prototype.verbose = "polluted";
    prototype.size = "polluted";
    try {
      expect(schema.parse({ size: 1 })).toEqual({ size: 1 });
      expect(refusal(() => schema.parse({})).message).toBe(
        "Thing.open(): size must be a number of bytes, got undefined",
      );
    } finally {
      delete prototype.verbose;
      delete prototype.size;
    }
    const bare = Object.assign(Object.create(null) as object, { size: 2, mode: "slow" });
    expect(schema.parse(bare)).toEqual({ size: 2, mode: "slow" });
  });

  it("an instance of a class has its inherited options read too, each once", () => {
    let reads = 0;
    class Settings {
      readonly size = 8;
      get mode(): "fast" {
        reads += 1;
        return "fast";
      }
    }
    expect(schema.parse(new Settings())).toEqual({ size: 8, mode: "fast" });
    expect(reads).toBe(1);
    class Bad {
      get verbose(): number {
        return 1;
      }
    }
    expect(refusal(() => schema.parse(new Bad())).argument).toBe("size");
  });
});

describe("options that cannot be listed", () => {
  it("a Proxy whose ownKeys trap throws is an ArgumentError naming the options", () => {
    const error = refusal(() =>
      schema.parse(
        new Proxy(
          {},
          {
            ownKeys() {
              throw new Error("trap");
            },
          },
        ),
      ),
    );
    expect(error.argument).toBe("options");
    expect(error.message).toBe("Thing.open(): the keys of options could not be read");
  });
});

describe("checkArgument", () => {
  it("checks one argument against its rule, naming it and the entry point", () => {
    expect(checkArgument(string(), "abc", "name", "startTrace()")).toBe("abc");
    expect(refusal(() => checkArgument(string(), 42, "name", "startTrace()")).message).toBe(
      "startTrace(): name must be a non-empty string, got 42",
    );
    expect(Object.is(checkArgument(byteCount(), -0, "bytes", "setCacheLimit()"), 0)).toBe(true);
  });
});
