import { describe, expect, it } from "vitest";
import { printable } from "./printable.js";

describe("printable", () => {
  it.each([
    ["plain text unchanged", "model.layers.0.weight", "model.layers.0.weight"],
    ["an escape sequence", "a\u001b[2Jb", "a\\x1b[2Jb"],
    ["newline, tab, carriage return", "a\nb\tc\rd", "a\\nb\\tc\\rd"],
    ["NUL, DEL and a C1 control", "\u0000\u007f\u009b", "\\x00\\x7f\\x9b"],
    ["bidirectional overrides and isolates", "x\u202ey\u2066z\u200f", "x\\u{202e}y\\u{2066}z\\u{200f}"],
    ["separators and the byte order mark", "\u2028\u2029\ufeff", "\\u{2028}\\u{2029}\\u{feff}"],
    ["lone surrogates", "a\ud800b\udc00", "a\\u{d800}b\\u{dc00}"],
    ["a surrogate pair kept", "🙂", "🙂"],
    ["backslashes left as they are", "C:\\path", "C:\\path"],
  ])("%s", (_name, text, expected) => {
    expect(printable(text)).toBe(expected);
  });

  it("cuts to the width with a final … (or, fromStart, a first one), after escaping", () => {
    expect(printable("abcdefgh", 5)).toBe("abcd…");
    expect(printable("abcdefgh", 5, true)).toBe("…efgh");
    expect(printable("abcde", 5)).toBe("abcde");
    expect(printable("\u001b\u001b", 5)).toBe("\\x1b…");
    expect(printable("abc", 1)).toBe("…");
    expect(printable("abc", 0)).toBe("");
    expect(printable("x".repeat(300))).toBe(`${"x".repeat(199)}…`);
  });

  it("never splits a surrogate pair where it cuts", () => {
    // "ab🙂c": the pair is at 2 and 3; a cut at 3 would keep its first half.
    expect(printable("ab🙂cd", 4)).toBe("ab…");
    expect(printable("ab🙂cd", 5)).toBe("ab🙂…");
    expect(printable("ab🙂cd", 3, true)).toBe("…cd");
    expect(printable("ab🙂cd", 4, true)).toBe("…cd");
    expect(printable("ab🙂cd", 5, true)).toBe("…🙂cd");
  });
});
