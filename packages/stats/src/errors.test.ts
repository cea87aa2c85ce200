import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { NuvecArgumentError, NuvecError } from "./errors.js";

const require = createRequire(import.meta.url);

class FamilyStateError extends NuvecError {}
class ForeignError extends Error {
  readonly code = "ERR_NUVEC_INVALID_ARGUMENT";
}
/** An argument class of another branch of the family, as a package's `…ArgumentError` is. */
class BranchArgumentError extends FamilyStateError {
  readonly argument = "bytes";
}
NuvecArgumentError.adopt(BranchArgumentError);

describe("NuvecError", () => {
  it("carries code, name, message and cause", () => {
    const cause = new Error("inner");
    const error = new FamilyStateError("ERR_NUVEC_X", "refused", { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe("ERR_NUVEC_X");
    expect(error.name).toBe("FamilyStateError");
    expect(error.message).toBe("refused");
    expect(error.cause).toBe(cause);
  });

  it("isInstance and instanceof hold for the family only", () => {
    const error = new FamilyStateError("ERR_NUVEC_X", "refused");
    expect(NuvecError.isInstance(error)).toBe(true);
    expect(FamilyStateError.isInstance(error)).toBe(true);
    expect(error instanceof NuvecError).toBe(true);
    expect(NuvecArgumentError.isInstance(error)).toBe(false);
    for (const other of [
      new ForeignError("x"),
      new Error("x"),
      { code: "ERR_NUVEC_X" },
      null,
      undefined,
      "x",
      1,
    ]) {
      expect(NuvecError.isInstance(other)).toBe(false);
      expect(other instanceof NuvecError).toBe(false);
    }
    expect(FamilyStateError.isInstance(new NuvecError("ERR_NUVEC_X", "base"))).toBe(false);
  });

  it("the argument error names its argument; adopted classes are argument errors", () => {
    const error = new NuvecArgumentError("bytes", "bytes must be a byte count");
    expect(error.code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    expect(error.argument).toBe("bytes");
    expect(new NuvecArgumentError("bytes", "too large", { code: "ERR_NUVEC_BUFFER_TOO_LARGE" }).code).toBe(
      "ERR_NUVEC_BUFFER_TOO_LARGE",
    );
    const branch = new BranchArgumentError("ERR_NUVEC_INVALID_ARGUMENT", "bad");
    expect(branch).toBeInstanceOf(NuvecArgumentError);
    expect(branch).toBeInstanceOf(FamilyStateError);
    expect(NuvecArgumentError.isInstance(branch)).toBe(true);
    expect(new FamilyStateError("ERR_NUVEC_X", "x")).not.toBeInstanceOf(NuvecArgumentError);
  });
});

describe("NuvecError across builds (ESM dist, CommonJS dist, the sources: three copies of the classes)", () => {
  it("an error of one copy is an instance of every other copy's class", async () => {
    const esm = (await import("../dist/index.js")) as typeof import("./errors.js");
    const cjs = require("../dist/index.cjs") as typeof import("./errors.js");
    expect(esm.NuvecError).not.toBe(cjs.NuvecError);
    const copies = [esm, cjs, { NuvecError, NuvecArgumentError }];
    for (const from of copies) {
      const argumentError = new from.NuvecArgumentError("path", "empty path");
      const plain = new from.NuvecError("ERR_NUVEC_X", "x");
      for (const to of copies) {
        expect(argumentError instanceof to.NuvecError).toBe(true);
        expect(argumentError instanceof to.NuvecArgumentError).toBe(true);
        expect(to.NuvecArgumentError.isInstance(argumentError)).toBe(true);
        expect(plain instanceof to.NuvecError).toBe(true);
        expect(to.NuvecError.isInstance(plain)).toBe(true);
        expect(plain instanceof to.NuvecArgumentError).toBe(false);
      }
    }
  });
});
