// Text from outside a program (a trace's name, a tensor's name, a path, an error message quoting either) is
// printed through `printable`: a terminal acts on escape sequences (colours, cursor moves, a changed window
// title, a hidden line), on carriage returns and on the bidirectional controls that reorder what is shown, and
// a name of thousands of characters breaks every table. So those characters are shown escaped, never sent,
// and the text is cut to a width. Pure: no `node:` import.
import { boolean, checkArgument, number, string } from "./schema.js";

// C0 and C1 controls, DEL, the bidirectional marks, embeddings, overrides and isolates, the line and
// paragraph separators, the byte order mark, and lone surrogates.
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const TEXT = string({ allowEmpty: true });
const WIDTH = number({ minimum: 0, integer: true });

/** `char` as an escape a reader recognises: `\n`, `\t`, `\r`, `\x1b`, `\u{202e}`. */
function escaped(char: string): string {
  if (char === "\n") return "\\n";
  if (char === "\t") return "\\t";
  if (char === "\r") return "\\r";
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/**
 * `text` safe to print on a terminal or in a table: every control, bidirectional and separator character and
 * every lone surrogate escaped (`\x1b`, `\n`, `\u{202e}`, `\u{d800}`), then cut to `width` characters with a
 * final `…` (from the left with `fromStart`, keeping the end: a path's or a name's end says the most).
 * Backslashes are left as they are. `printable("a\x1b[2Jb")` is `"a\\x1b[2Jb"`.
 *
 * @throws ArgumentError when `text` is not a string, `width` not a whole number ≥ 0 or `fromStart` not a boolean.
 */
export function printable(text: string, width = 200, fromStart = false): string {
  checkArgument(TEXT, text, "text", "printable()");
  checkArgument(WIDTH, width, "width", "printable()");
  checkArgument(boolean, fromStart, "fromStart", "printable()");
  const safe = text.replace(UNSAFE, escaped);
  if (safe.length <= width) return safe;
  if (width <= 1) return "…".slice(0, width);
  // A cut never splits a surrogate pair: half of one would be a lone surrogate, itself unprintable.
  if (fromStart) {
    const start = safe.length - width + 1;
    return `…${safe.slice(isLowSurrogate(safe, start) ? start + 1 : start)}`;
  }
  const end = width - 1;
  return `${safe.slice(0, isLowSurrogate(safe, end) ? end - 1 : end)}…`;
}

/** Whether `text[index]` is the second half of a surrogate pair. */
function isLowSurrogate(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff;
}
