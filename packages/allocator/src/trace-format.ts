// nuvec's trace format in one module: the events and header (types) and the line reader every trace reader
// uses (pure string work; file and stream I/O stay in node/trace-file.ts; the recorder a Device writes traces
// with is trace-recorder.ts). One header object on the first line, then one event per line (NDJSON, gzipped
// or not): `["a", id, bytes]`, `["f", id]` as the shared traces, and the kinds only a Device records: `["m", id,
// length]` a file mapped, `["u", id]` its release, `["l", "memory" | "cache" | "wired", bytes]` a limit set,
// `["c"]` the cache cleared, `["p"]` the peak reset, `["q", id]` a buffer freed while a view of it was moved
// away (never cached, its bytes quarantined) and `["r", id]` that quarantined buffer given back. Annotations,
// which no replay figure depends on: `["k", name]` a mark (a step boundary), `["n", label, text]` a label
// defined once, `["s", stack, [frames]]` a call stack defined once; an `"a"` event may name a label and a
// stack (`["a", id, bytes, label | null, stack]`), an `"m"` event a label (`["m", id, length, label]`).
//
// A trace is a self-contained history of its window: it opens with the buffers and mappings live when it
// started (as "a" and "m" events, counted in the header's `opening_events`), so every later free or unmap
// names an id of this trace. Ids are the recorder's own, keyed by the device's objects, so back-to-back
// traces never reuse an earlier trace's ids and an object born before the trace is freed under its own id.
import { FormatError } from "@nuvec/stats";
import type { AllocatorPolicy, BoundedRelease } from "./options.js";

/**
 * An allocation event of a trace: allocate `bytes` (as requested) under the dense id `id`; optionally the id
 * of its label (a {@link TraceLabel} earlier in the trace, `null`: none) and of its call stack (a
 * {@link TraceStack} earlier in the trace).
 */
export type TraceAllocate =
  | readonly ["a", number, number]
  | readonly ["a", number, number, number]
  | readonly ["a", number, number, number | null, number];
/** A free event of a trace: free allocation `id`. */
export type TraceFree = readonly ["f", number];
/**
 * A file of `length` bytes mapped under the dense id `id` (recorded by a Device; beyond the shared traces),
 * optionally with the id of its label (a Device labels a mapped file by its path).
 */
export type TraceMap = readonly ["m", number, number] | readonly ["m", number, number, number];
/** Mapping `id` released. */
export type TraceUnmap = readonly ["u", number];
/** A limit set: the memory limit, the cache limit or the wired limit (a pure replay has no wired memory). */
export type TraceLimit = readonly ["l", "memory" | "cache" | "wired", number];
/** The cache cleared. */
export type TraceClearCache = readonly ["c"];
/** The peak reset. */
export type TraceResetPeak = readonly ["p"];
/** Allocation `id` freed while a view of it was moved away: released, never cached, its bytes quarantined. */
export type TraceQuarantine = readonly ["q", number];
/** Quarantined allocation `id` given back by the backend (the moved view was collected). */
export type TraceGiveBack = readonly ["r", number];
/** A mark: a point of the program's own (a decode step's boundary), named; no replay figure depends on it. */
export type TraceMark = readonly ["k", string];
/** Label `id` defined as `text` (once per trace, before the first event that names it). */
export type TraceLabel = readonly ["n", number, string];
/** Call stack `id` defined as its frames, innermost first (once per trace, before the first event that names it). */
export type TraceStack = readonly ["s", number, readonly string[]];
/**
 * One event of a trace: the shared traces have allocations and frees; a trace recorded by a Device also
 * has mappings, limit changes, cache clears and peak resets, which a replay applies in order, and may have
 * marks, labels and stacks, which a replay passes over.
 */
export type TraceEvent =
  | TraceAllocate
  | TraceFree
  | TraceMap
  | TraceUnmap
  | TraceLimit
  | TraceClearCache
  | TraceResetPeak
  | TraceQuarantine
  | TraceGiveBack
  | TraceMark
  | TraceLabel
  | TraceStack;

/** The header object on a trace's first line (every field optional to a reader). */
export interface TraceHeader {
  name?: string;
  workload?: string;
  source?: string;
  events?: number;
  allocations?: number;
  live_at_end?: number;
  peak_live_bytes?: number;
  [field: string]: unknown;
}

/** Whether `value` is a non-negative safe integer (an id, a size). */
export const isByteCount = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;

/** Whether `value` has the shape of a {@link TraceEvent} (tag, arity, non-negative integer ids and sizes). */
export function isTraceEvent(value: unknown): value is TraceEvent {
  if (!Array.isArray(value)) return false;
  switch (value[0]) {
    case "a":
      return (
        isByteCount(value[1]) &&
        isByteCount(value[2]) &&
        (value.length === 3 ||
          (value.length === 4 && isByteCount(value[3])) ||
          (value.length === 5 && (value[3] === null || isByteCount(value[3])) && isByteCount(value[4])))
      );
    case "m":
      return (
        isByteCount(value[1]) &&
        isByteCount(value[2]) &&
        (value.length === 3 || (value.length === 4 && isByteCount(value[3])))
      );
    case "k":
      return value.length === 2 && typeof value[1] === "string";
    case "n":
      return value.length === 3 && isByteCount(value[1]) && typeof value[2] === "string";
    case "s":
      return (
        value.length === 3 &&
        isByteCount(value[1]) &&
        Array.isArray(value[2]) &&
        value[2].every((frame: unknown) => typeof frame === "string")
      );
    case "f":
    case "u":
    case "q":
    case "r":
      return value.length === 2 && isByteCount(value[1]);
    case "l":
      return (
        value.length === 3 &&
        (value[1] === "memory" || value[1] === "cache" || value[1] === "wired") &&
        isByteCount(value[2])
      );
    case "c":
    case "p":
      return value.length === 1;
    default:
      return false;
  }
}

/** The longest line a trace reader accepts by default: a header or event is far shorter. */
export const DEFAULT_MAX_LINE_LENGTH = 1024 * 1024;

const EVENT_SHAPES = `["a", id, bytes], ["f", id], or a Device's "m", "u", "l", "c", "p", "q", "r", "k", "n", "s"`;

/**
 * The digits of `text` from `start` up to the first character that is not one, as a number, and where they
 * end; `undefined` unless JSON would read the same integer (no leading zero, at most 15 digits: safe).
 */
function digitsAt(text: string, start: number): { value: number; end: number } | undefined {
  let value = 0;
  let index = start;
  for (; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 48 || code > 57) break;
    value = value * 10 + (code - 48);
  }
  const count = index - start;
  if (count === 0 || count > 15 || (count > 1 && text.charCodeAt(start) === 48)) return undefined;
  return { value, end: index };
}

/**
 * A fast path for the lines that make up nearly every trace, exactly `["a",id,bytes]`, `["a",id,bytes,label]`
 * and `["f",id]` (what the shared traces and the Device write): read without `JSON.parse`, which costs several times more. Any
 * other line (spaces, other kinds, anything odd) returns `undefined` and goes through `JSON.parse`.
 */
function parseCommonEvent(text: string, start: number, end: number): TraceEvent | undefined {
  // '["' then the tag, '",'
  if (text.charCodeAt(start) !== 91 || text.charCodeAt(start + 1) !== 34) return undefined;
  const tag = text.charCodeAt(start + 2);
  if ((tag !== 97 && tag !== 102) || text.charCodeAt(start + 3) !== 34 || text.charCodeAt(start + 4) !== 44)
    return undefined;
  const id = digitsAt(text, start + 5);
  if (id === undefined) return undefined;
  if (tag === 102) {
    if (text.charCodeAt(id.end) !== 93 || id.end + 1 !== lineEnd(text, start, end)) return undefined;
    return ["f", id.value];
  }
  if (text.charCodeAt(id.end) !== 44) return undefined;
  const bytes = digitsAt(text, id.end + 1);
  if (bytes === undefined) return undefined;
  if (text.charCodeAt(bytes.end) === 44) {
    // A labelled allocation, `["a",id,bytes,label]`.
    const label = digitsAt(text, bytes.end + 1);
    if (
      label === undefined ||
      text.charCodeAt(label.end) !== 93 ||
      label.end + 1 !== lineEnd(text, start, end)
    )
      return undefined;
    return ["a", id.value, bytes.value, label.value];
  }
  if (text.charCodeAt(bytes.end) !== 93 || bytes.end + 1 !== lineEnd(text, start, end)) return undefined;
  return ["a", id.value, bytes.value];
}

/** Where a line's content ends: before a CR that ends it (CRLF files). */
function lineEnd(text: string, start: number, end: number): number {
  return end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
}

/** Splits text into lines and parses each into a header or an event; shared by every reader. */
export class TraceLineParser {
  readonly #name: string;
  readonly #maxLineLength: number;
  #pending = "";
  #line = 0;
  #events = 0;
  #header: TraceHeader | undefined;

  constructor(name: string, maxLineLength: number) {
    this.#name = name;
    this.#maxLineLength = maxLineLength;
  }

  get events(): number {
    return this.#events;
  }

  get header(): TraceHeader | undefined {
    return this.#header;
  }

  /** Parses the complete lines of `text` (appended to what was pending) into `out`. */
  push(text: string, out: (TraceEvent | TraceHeader)[]): void {
    const joined = this.#pending === "" ? text : this.#pending + text;
    let start = 0;
    for (let end = joined.indexOf("\n"); end !== -1; end = joined.indexOf("\n", start)) {
      if (end - start > this.#maxLineLength) this.#tooLong();
      const event =
        this.#header !== undefined || this.#events > 0 ? parseCommonEvent(joined, start, end) : undefined;
      if (event === undefined) this.#parse(joined.slice(start, end), out);
      else {
        this.#line += 1;
        this.#events += 1;
        out.push(event);
      }
      start = end + 1;
    }
    this.#pending = start === 0 ? joined : joined.slice(start);
    if (this.#pending.length > this.#maxLineLength) this.#tooLong();
  }

  /** Parses the last line (one without a newline). */
  end(out: (TraceEvent | TraceHeader)[]): void {
    if (this.#pending !== "") this.#parse(this.#pending, out);
    this.#pending = "";
    if (this.#events === 0)
      throw new FormatError("ERR_NUVEC_TRACE_EMPTY", `trace file ${this.#name} has no events`);
  }

  #tooLong(): never {
    throw new FormatError(
      "ERR_NUVEC_TRACE_TOO_LARGE",
      `trace file ${this.#name}, line ${this.#line + 1}: longer than ${this.#maxLineLength} characters (no trace line is)`,
    );
  }

  #parse(raw: string, out: (TraceEvent | TraceHeader)[]): void {
    this.#line += 1;
    const line = raw.trim();
    if (line === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new FormatError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${this.#name}, line ${this.#line}: not JSON (${(error as Error).message})`,
        { cause: error },
      );
    }
    if (isTraceEvent(value)) {
      this.#events += 1;
      out.push(value);
    } else if (
      this.#header === undefined &&
      this.#events === 0 &&
      typeof value === "object" &&
      value !== null &&
      !Array.isArray(value)
    ) {
      this.#header = value as TraceHeader;
      out.push(this.#header);
    } else {
      throw new FormatError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${this.#name}, line ${this.#line}: not an event (${EVENT_SHAPES}): ${line.slice(0, 80)}`,
      );
    }
  }
}

/**
 * A trace: its header (a recorded trace always has one; a file may not) and events, and the NDJSON text to save
 * (gzip it to match the shared files). What `TraceRecorder.finish()` (a Device's `stopTrace()`) gives and what
 * `readTrace` reads.
 */
export interface Trace {
  readonly header: TraceHeader | undefined;
  readonly events: TraceEvent[];
  /** The trace as NDJSON text: the header line (when there is one), then one line per event. */
  toNdjson(): string;
}

/** The {@link Trace} of `header` and `events`. */
export function traceOf(header: TraceHeader | undefined, events: TraceEvent[]): Trace {
  return {
    header,
    events,
    toNdjson: () =>
      `${[...(header === undefined ? [] : [header]), ...events].map((line) => JSON.stringify(line)).join("\n")}\n`,
  };
}

/** What was live when a trace started: each entry an object of the device and its requested bytes (or length). */
export interface TraceOpening {
  /**
   * Buffers counted in `active` at the start: live ones and those whose free waits (`free({ after })`), whose
   * free is recorded when it happens.
   */
  readonly buffers: Iterable<readonly [object, number]>;
  /**
   * Mapped files counted in `mapped` at the start: live ones and those whose unmap waits; each optionally
   * with its label (a Device gives the file's path).
   */
  readonly mappings: Iterable<readonly [object, number] | readonly [object, number, string]>;
  /**
   * Freed buffers the backend still holds for a view moved away, counted in `quarantined`: each opens as an
   * allocation at once quarantined (`a`, `q`), so that its give-back (`r`) is recorded and the replay's
   * `quarantined` agrees. A peak reset (`p`) follows them, so they do not count in the window's peak.
   */
  readonly quarantined?: Iterable<readonly [object, number]>;
  /** The allocator's setup when the trace started: written to the header as `allocator`. */
  readonly allocator?: TraceAllocatorSetup;
}

/**
 * What a replay needs to run the recording device's allocator decision for decision: the policy and its
 * settings, the device's facts, the limits in force when the trace started, and whether the allocator was
 * fresh then (no live buffer, nothing cached: a segments replay then reproduces every figure exactly; a
 * trace started later opens with its live buffers, each as an allocation of its charged bytes).
 */
export interface TraceAllocatorSetup {
  readonly policy: AllocatorPolicy;
  readonly reserveRatio: number;
  readonly boundedRelease: BoundedRelease;
  /** The segments policy's sizes (under that policy). */
  readonly segments?: Readonly<Record<string, number | boolean>>;
  /** The source's map granularity when it maps memory into reserved address space (expandable segments). */
  readonly mapGranularity?: number;
  readonly workingSet: number;
  readonly memorySize: number;
  readonly maxBufferLength: number;
  readonly resourceLimit: number;
  readonly pageSize: number;
  readonly memoryLimit: number;
  readonly cacheLimit: number;
  readonly fresh: boolean;
}
