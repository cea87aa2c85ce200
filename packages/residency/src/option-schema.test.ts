import { ArgumentError, type SchemaType } from "@nuvec/stats";
import { describe, expect, expectTypeOf, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { RESIDENCY_OPTIONS } from "./option-schema.js";
import type { ResidencyOptions } from "./types.js";

describe("residency's options, declared once", () => {
  it("declare exactly ResidencyOptions", () => {
    expectTypeOf<SchemaType<typeof RESIDENCY_OPTIONS.fields>>().toEqualTypeOf<ResidencyOptions>();
  });

  it.each([
    [{ workingSet: "1" }, "workingSet"],
    [{}, "workingSet"],
    [{ workingSet: 1, maxPercentPerSet: 5 }, "maxPercentPerSet"],
    [{ workingSet: 1, maxPercent: "5" }, "maxPercent"],
  ])("refuses %j naming %s", (options, argument) => {
    const error = thrown(() => RESIDENCY_OPTIONS.parse(options));
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).argument).toBe(argument);
  });
});
