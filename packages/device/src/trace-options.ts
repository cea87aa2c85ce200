// The options of tracing, declared once (the rules of @nuvec/stats): `startTrace(options)`,
// `malloc(bytes, { label })`, `mark(name)`. Each declaration is the check and makes the error messages.
import { checkArgument, optionsSchema, type Rule, rules } from "@nuvec/stats";

const { number, optional, rule, string } = rules;

/** The longest label `malloc(bytes, { label })` takes: a short name ("kv-cache", "logits"), not a message. */
export const MAX_LABEL_LENGTH = 128;
/** The longest mark name `mark(name)` takes. */
export const MAX_MARK_LENGTH = 256;
/** The most stack frames `startTrace({ stacks })` records per allocation. */
export const MAX_STACK_FRAMES = 64;

/** Whether `text` holds a control character (a newline, a NUL, DEL): never in a label or a mark. */
function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** A short name: a non-empty string of at most `maxLength` characters, no control characters. */
function shortName(maxLength: number): Rule<string> {
  return rule(
    `a non-empty string of at most ${maxLength} characters without control characters`,
    (value) =>
      typeof value === "string" &&
      value.length > 0 &&
      value.length <= maxLength &&
      !hasControlCharacter(value),
  );
}

/** A label of an allocation. */
export const TRACE_LABEL = shortName(MAX_LABEL_LENGTH);

/** A mark's name. */
export const TRACE_MARK = shortName(MAX_MARK_LENGTH);

/** `device.malloc(bytes, options)`. */
export const MALLOC_OPTIONS = optionsSchema("malloc()", { label: optional(TRACE_LABEL) });

/** `device.startTrace(options)`. */
export const TRACE_OPTIONS = optionsSchema("startTrace()", {
  name: optional(rules.string({ maxLength: 256 })),
  file: optional(
    rule<string>(
      "a non-empty path without a NUL character",
      (value) => typeof value === "string" && value.length > 0 && !value.includes("\u0000"),
    ),
  ),
  limit: optional(number({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, integer: true })),
  stacks: optional(number({ minimum: 0, maximum: MAX_STACK_FRAMES, integer: true })),
});

/** What `device.malloc(bytes, options)` takes. */
export interface MallocOptions {
  /**
   * A short name for the allocation, recorded with it in a trace (`["a", id, bytes, label]`): a non-empty
   * string of at most 128 characters without control characters. Checked whether or not a trace is running.
   */
  label?: string;
}

/** What `device.startTrace(options)` takes. */
export interface TraceOptions {
  /** The trace's name in its header (at most 256 characters); default `"device-trace"`. */
  name?: string;
  /**
   * Stream the trace to this file instead of keeping it: NDJSON, gzipped when the name ends with `.gz`. The
   * file is opened (created or truncated) by `startTrace`, which refuses a path it cannot open with nothing
   * changed; `stopTrace()` writes the rest and closes it.
   */
  file?: string;
  /**
   * The most events recorded after the trace's opening: the first record that would pass it ends the
   * recording, and the header says so (`limit_reached`, `events_dropped`). A positive integer; default none.
   */
  limit?: number;
  /** Frames of the JavaScript call stack recorded with each allocation (0 to 64); default 0, none. */
  stacks?: number;
}

/** The trace's name: as `startTrace(name)` has always taken it. */
const TRACE_NAME = string({ maxLength: 256 });

/** The checked options of `startTrace(nameOrOptions)`: a string is the name; the name defaults. */
export function checkTraceOptions(nameOrOptions: unknown): {
  name: string;
  file?: string;
  limit?: number;
  stacks?: number;
} {
  if (nameOrOptions === undefined) return { name: "device-trace" };
  if (typeof nameOrOptions !== "object" || nameOrOptions === null || Array.isArray(nameOrOptions))
    return { name: checkArgument(TRACE_NAME, nameOrOptions, "name", "startTrace()") };
  const options = TRACE_OPTIONS.check(nameOrOptions, "options", "startTrace()");
  return { ...options, name: options.name ?? "device-trace" };
}
