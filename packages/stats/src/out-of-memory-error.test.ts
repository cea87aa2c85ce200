// OutOfMemoryError's fields typed by code: `instanceof` narrows to one member per code, and comparing `code`
// narrows the fields. The `expectTypeOf` and `@ts-expect-error` lines are checked by `tsc -p
// tsconfig.test.json` (the package's typecheck); the runtime lines pin what each code really carries.
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  NuvecError,
  OutOfMemoryError,
  type OutOfMemoryErrorByCode,
  type OutOfMemoryErrorCode,
  type OutOfMemoryErrorOf,
} from "./errors.js";

/** One error of each code, made as nuvec's refusals make them. */
const made = {
  ERR_NUVEC_OUT_OF_MEMORY: new OutOfMemoryError("ERR_NUVEC_OUT_OF_MEMORY", "limit", {
    requested: 256,
    active: 1024,
    mapped: 512,
    quarantined: 0,
    limit: 1536,
  }),
  ERR_NUVEC_RESOURCE_LIMIT: new OutOfMemoryError("ERR_NUVEC_RESOURCE_LIMIT", "resources", { limit: 7 }),
  ERR_NUVEC_ALLOCATION_FAILED: new OutOfMemoryError("ERR_NUVEC_ALLOCATION_FAILED", "no buffer", {
    requested: 4096,
  }),
  ERR_NUVEC_SYSTEM_ALLOCATION_FAILED: new OutOfMemoryError("ERR_NUVEC_SYSTEM_ALLOCATION_FAILED", "twice", {
    requested: 8192,
    cause: "the backend's error",
  }),
} satisfies Record<OutOfMemoryErrorCode, OutOfMemoryError>;

/** What a caller reads of a caught error, by code: the narrowing under test. */
function fieldsOf(error: unknown): Record<string, unknown> | undefined {
  if (!(error instanceof OutOfMemoryError)) return undefined;
  switch (error.code) {
    case "ERR_NUVEC_OUT_OF_MEMORY":
      expectTypeOf(error.active).toEqualTypeOf<number>();
      expectTypeOf(error.mapped).toEqualTypeOf<number>();
      expectTypeOf(error.quarantined).toEqualTypeOf<number>();
      expectTypeOf(error.limit).toEqualTypeOf<number>();
      expectTypeOf(error.requested).toEqualTypeOf<number>();
      return { requested: error.requested, active: error.active, mapped: error.mapped, limit: error.limit };
    case "ERR_NUVEC_RESOURCE_LIMIT":
      expectTypeOf(error.limit).toEqualTypeOf<number>();
      // @ts-expect-error the resource limit counts buffers, not bytes: no `active` is set.
      expectTypeOf(error.active).toEqualTypeOf<number>();
      return { limit: error.limit };
    case "ERR_NUVEC_ALLOCATION_FAILED":
      expectTypeOf(error.requested).toEqualTypeOf<number>();
      // @ts-expect-error a backend's refusal knows no limit.
      expectTypeOf(error.limit).toEqualTypeOf<number>();
      return { requested: error.requested };
    case "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED":
      expectTypeOf(error.requested).toEqualTypeOf<number>();
      expectTypeOf(error).toHaveProperty("cause").toEqualTypeOf<unknown>();
      return { requested: error.requested, cause: error.cause };
    default:
      // Every code is handled above: what is left is `never`.
      expectTypeOf(error).toEqualTypeOf<never>();
      return undefined;
  }
}

describe("OutOfMemoryError typed by code", () => {
  it("instanceof narrows to one member per code, the class's members kept", () => {
    const error: unknown = made.ERR_NUVEC_RESOURCE_LIMIT;
    if (error instanceof OutOfMemoryError) {
      expectTypeOf(error).toEqualTypeOf<OutOfMemoryError & OutOfMemoryErrorByCode>();
      expectTypeOf(error.code).toEqualTypeOf<OutOfMemoryErrorCode>();
      expectTypeOf(error.message).toEqualTypeOf<string>();
    }
    expectTypeOf<OutOfMemoryErrorOf<"ERR_NUVEC_RESOURCE_LIMIT">>().toEqualTypeOf<
      {
        readonly code: "ERR_NUVEC_RESOURCE_LIMIT";
      } & { readonly limit: number }
    >();
    expect(error instanceof OutOfMemoryError).toBe(true);
  });

  it("each code carries exactly the fields its type promises", () => {
    expect(fieldsOf(made.ERR_NUVEC_OUT_OF_MEMORY)).toEqual({
      requested: 256,
      active: 1024,
      mapped: 512,
      limit: 1536,
    });
    expect(made.ERR_NUVEC_OUT_OF_MEMORY.quarantined).toBe(0);
    expect(fieldsOf(made.ERR_NUVEC_RESOURCE_LIMIT)).toEqual({ limit: 7 });
    expect(fieldsOf(made.ERR_NUVEC_ALLOCATION_FAILED)).toEqual({ requested: 4096 });
    expect(fieldsOf(made.ERR_NUVEC_SYSTEM_ALLOCATION_FAILED)).toEqual({
      requested: 8192,
      cause: "the backend's error",
    });
    // Fields a code does not carry hold undefined.
    const { active, mapped, quarantined, requested } = made.ERR_NUVEC_RESOURCE_LIMIT;
    expect([active, mapped, quarantined, requested]).toEqual([undefined, undefined, undefined, undefined]);
    expect(made.ERR_NUVEC_ALLOCATION_FAILED.limit).toBeUndefined();
    expect(fieldsOf(new Error("not ours"))).toBeUndefined();
    expect(fieldsOf({ code: "ERR_NUVEC_OUT_OF_MEMORY", active: 1 })).toBeUndefined();
  });

  it("the constructor asks for the fields of the code it is given", () => {
    const limitOnly = { limit: 1 };
    const requestedOnly = { requested: 1 };
    // @ts-expect-error the memory limit's error needs requested, active, mapped and quarantined too.
    const noFigures = new OutOfMemoryError("ERR_NUVEC_OUT_OF_MEMORY", "x", limitOnly);
    // @ts-expect-error the retry's failure needs its cause.
    const noCause = new OutOfMemoryError("ERR_NUVEC_SYSTEM_ALLOCATION_FAILED", "x", requestedOnly);
    // @ts-expect-error not a code of this kind.
    const notItsCode = new OutOfMemoryError("ERR_NUVEC_BUFFER_FREED", "x", limitOnly);
    // Checked by the types only: at run time each is made with what it was given.
    expect([noFigures.limit, noCause.requested, notItsCode.code]).toEqual([1, 1, "ERR_NUVEC_BUFFER_FREED"]);
  });

  it("a class of your own extending it keeps its members and the narrowing by code", () => {
    class BatchTooLargeError extends OutOfMemoryError {
      readonly batch = 32;
    }
    const error: unknown = new BatchTooLargeError("ERR_NUVEC_RESOURCE_LIMIT", "batch", { limit: 2 });
    if (!(error instanceof BatchTooLargeError)) throw new Error("not matched by its prototype chain");
    expectTypeOf(error.batch).toEqualTypeOf<number>();
    if (error.code !== "ERR_NUVEC_RESOURCE_LIMIT") throw new Error(`code ${error.code}`);
    expectTypeOf(error.limit).toEqualTypeOf<number>();
    expect([error.batch, error.limit, error.name]).toEqual([32, 2, "BatchTooLargeError"]);
    expect(error instanceof OutOfMemoryError && error instanceof NuvecError).toBe(true);
    expect(made.ERR_NUVEC_RESOURCE_LIMIT instanceof BatchTooLargeError).toBe(false);
  });
});
