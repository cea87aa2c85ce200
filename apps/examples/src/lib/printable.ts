// Text from outside the program (a trace's name, a tensor's name, a path, an error message quoting either)
// is printed through `printable`: a terminal acts on escape sequences (colours, cursor moves, a changed
// window title, a hidden line), on carriage returns and on the bidirectional controls that reorder what is
// shown, and a name of thousands of characters breaks every table. So those characters are shown escaped,
// never sent, and the text is cut to a width.

// C0 and C1 controls, DEL, the bidirectional marks, embeddings, overrides and isolates, the line and
// paragraph separators, the byte order mark, and lone surrogates.
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `char` as an escape a reader recognises: `\n`, `\t`, `\r`, `\x1b`, `\u{202e}`. */
function escaped(char: string): string {
  if (char === "\n") return "\\n";
  if (char === "\t") return "\\t";
  if (char === "\r") return "\\r";
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/**
 * `text` safe to print: every control, bidirectional and separator character escaped (`\x1b`, `\n`,
 * `\u{202e}`), then cut to `width` characters with a final `…` (from the left, keeping the end, with
 * `fromStart`). Backslashes are left as they are.
 */
export function printable(text: string, width = 200, fromStart = false): string {
  const safe = String(text).replace(UNSAFE, escaped);
  if (safe.length <= width) return safe;
  if (width <= 1) return "…".slice(0, Math.max(0, width));
  return fromStart ? `…${safe.slice(safe.length - width + 1)}` : `${safe.slice(0, width - 1)}…`;
}
