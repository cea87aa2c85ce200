import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import * as errors from "./errors.js";
import {
  ArgumentError,
  ERROR_CODES,
  FormatError,
  NativeUnavailableError,
  NuvecError,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "./errors.js";

const require = createRequire(import.meta.url);

/** The seven kinds, each made with one of its codes. */
function oneOfEach(from: typeof errors) {
  return {
    ArgumentError: new from.ArgumentError("bytes", "bad"),
    StateError: new from.StateError("ERR_NUVEC_BUFFER_FREED", "freed"),
    OutOfMemoryError: new from.OutOfMemoryError("ERR_NUVEC_RESOURCE_LIMIT", "oom", { limit: 1 }),
    SystemCallError: new from.SystemCallError("open failed", {
      syscall: "open",
      errno: "ENOENT",
      errnoNumber: 2,
    }),
    NativeUnavailableError: new from.NativeUnavailableError("no addon"),
    FormatError: new from.FormatError("ERR_NUVEC_TRACE_CORRUPT", "corrupt"),
    UnsupportedError: new from.UnsupportedError("ERR_NUVEC_NOT_HOST_VISIBLE", "device memory"),
  };
}

describe("the error family", () => {
  it("is a root and seven kinds, each with its own registered brand", () => {
    const kinds = [
      ArgumentError,
      StateError,
      OutOfMemoryError,
      SystemCallError,
      NativeUnavailableError,
      FormatError,
      UnsupportedError,
    ];
    expect(kinds.map((kind) => kind.name).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(NuvecError.brand).toBe(Symbol.for("nuvec.error"));
    for (const kind of kinds)
      expect((kind as unknown as { brand: symbol }).brand).toBe(Symbol.for(`nuvec.error.${kind.name}`));
  });

  it("carries code, name, message, cause and each kind's fields", () => {
    const cause = new Error("inner");
    const error = new OutOfMemoryError("ERR_NUVEC_OUT_OF_MEMORY", "refused", {
      requested: 4,
      active: 1,
      mapped: 2,
      quarantined: 0,
      limit: 3,
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      code: "ERR_NUVEC_OUT_OF_MEMORY",
      name: "OutOfMemoryError",
      message: "refused",
    });
    expect(error).toMatchObject({ requested: 4, active: 1, mapped: 2, quarantined: 0, limit: 3, cause });
    const argument = new ArgumentError("bytes", "too large", {
      code: "ERR_NUVEC_BUFFER_TOO_LARGE",
      requested: 9,
      maximum: 8,
    });
    expect(argument).toMatchObject({
      argument: "bytes",
      code: "ERR_NUVEC_BUFFER_TOO_LARGE",
      requested: 9,
      maximum: 8,
    });
    expect(new ArgumentError("path", "empty").code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    const system = new SystemCallError("open failed", {
      syscall: "open",
      errno: "ENOENT",
      errnoNumber: 2,
      path: "/x",
    });
    expect(system).toMatchObject({
      code: "ERR_NUVEC_SYSTEM",
      syscall: "open",
      errno: "ENOENT",
      errnoNumber: 2,
      path: "/x",
    });
    const format = new FormatError("ERR_NUVEC_SAFETENSORS", "bad dtype", {
      tensor: "a",
      field: "dtype",
      cause,
    });
    expect(format).toMatchObject({ code: "ERR_NUVEC_SAFETENSORS", tensor: "a", field: "dtype", cause });
    // Fields not given are absent, not own properties holding undefined.
    expect(Object.keys(new FormatError("ERR_NUVEC_TRACE_EMPTY", "empty"))).toEqual(["code", "name"]);
    expect(new NativeUnavailableError("no addon").reason).toBe("load-failed");
    expect(new NativeUnavailableError("no GPU", { reason: "backend-unavailable" }).reason).toBe(
      "backend-unavailable",
    );
  });

  // That each kind is an instance of itself and the root only, in every copy: "across builds" below.
  it("instanceof refuses what is not a nuvec error, and a brand without the root's", () => {
    for (const other of [new Error("x"), { code: "ERR_NUVEC_X" }, null, undefined, "x", 1]) {
      expect(other instanceof NuvecError).toBe(false);
      expect(other instanceof ArgumentError).toBe(false);
    }
    // A brand alone is not enough: the root's brand must be there too.
    const forged = { [Symbol.for("nuvec.error.StateError")]: true };
    expect(forged instanceof StateError).toBe(false);
  });

  it("a runtime's own class extending a kind is matched by its prototype chain, and is still the kind", () => {
    class TensorShapeError extends ArgumentError {}
    const error = new TensorShapeError("shape", "bad shape");
    expect(error).toBeInstanceOf(TensorShapeError);
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error).toBeInstanceOf(NuvecError);
    expect(new ArgumentError("shape", "x")).not.toBeInstanceOf(TensorShapeError);
    expect(error.name).toBe("TensorShapeError");
  });
});

describe("across builds (ESM dist, CommonJS dist, the sources: three copies of the classes)", () => {
  it("an error of one copy is an instance of the same kind of every other copy, and of no other kind", async () => {
    const esm = (await import("../dist/index.js")) as typeof errors;
    const cjs = require("../dist/index.cjs") as typeof errors;
    expect(esm.NuvecError).not.toBe(cjs.NuvecError);
    const copies = [esm, cjs, errors];
    for (const from of copies) {
      for (const [name, error] of Object.entries(oneOfEach(from))) {
        for (const to of copies) {
          expect(error instanceof to.NuvecError).toBe(true);
          for (const kind of Object.keys(ERROR_CODES)) {
            const target = to[kind as keyof typeof errors] as typeof NuvecError;
            expect(error instanceof target, `${name} instanceof ${kind}`).toBe(kind === name);
          }
        }
      }
    }
  });
});

describe("docs/ERRORS.md", () => {
  const text = readFileSync(new URL("../../../docs/ERRORS.md", import.meta.url), "utf8");
  /** The class table's rows: class → codes. */
  const rows = new Map(
    [...text.matchAll(/^\| `(\w+Error)` +\|[^|]*\| ([^|]*)\|/gm)].map((match) => [
      match[1] as string,
      [...(match[2] as string).matchAll(/`(ERR_NUVEC_\w+)`/g)].map((code) => code[1]),
    ]),
  );
  /** The code table's rows, in order. */
  const explained = [...text.matchAll(/^\| `(ERR_NUVEC_\w+)` +\|/gm)].map((match) => match[1]);

  it("lists every kind with exactly its codes, and the root", () => {
    expect(rows.has("NuvecError")).toBe(true);
    for (const [kind, codes] of Object.entries(ERROR_CODES)) expect(rows.get(kind), kind).toEqual([...codes]);
    expect([...rows.keys()].sort()).toEqual(["NuvecError", ...Object.keys(ERROR_CODES)].sort());
  });

  it("explains every code once", () => {
    expect([...explained].sort()).toEqual(Object.values(ERROR_CODES).flat().sort());
  });

  it("names no code that is not one", () => {
    const all = new Set(Object.values(ERROR_CODES).flat());
    for (const [, code] of text.matchAll(/`(ERR_NUVEC_\w+)`/g))
      expect(all.has(code as never), code).toBe(true);
  });
});
