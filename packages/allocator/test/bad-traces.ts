// Traces every replay refuses with a FormatError (ERR_NUVEC_TRACE_EVENT), each with the words its message
// holds: the one table the in-memory replay and the file and stream readers are all checked against.
import type { TraceEvent } from "../src/trace-format.js";

/** [what is wrong, the trace, what the message says]. */
export type BadTrace = [string, TraceEvent[], RegExp];

const trace = (...events: unknown[]) => events as TraceEvent[];

/** Impossible id histories: of buffers, quarantines and mappings. */
export const badIdHistories: BadTrace[] = [
  ["a free of an unknown id", trace(["a", 0, 10], ["f", 7]), /never allocated/],
  ["a double free", trace(["a", 0, 10], ["f", 0], ["f", 0]), /already freed/],
  ["a reused id", trace(["a", 0, 10], ["f", 0], ["a", 0, 10]), /already allocated/],
  ["a reused live id", trace(["a", 0, 10], ["a", 0, 10]), /already allocated/],
  ["a quarantine of an id never allocated", trace(["q", 3]), /never allocated/],
  ["a free after a quarantine", trace(["a", 0, 10], ["q", 0], ["f", 0]), /already freed/],
  ["a give-back of a live id", trace(["a", 0, 10], ["r", 0]), /not quarantined/],
  ["a give-back twice", trace(["a", 0, 10], ["q", 0], ["r", 0], ["r", 0]), /not quarantined/],
  ["an unmap of an unknown id", trace(["m", 0, 4096], ["u", 3]), /never mapped/],
  ["a double unmap", trace(["m", 0, 4096], ["u", 0], ["u", 0]), /already released/],
  ["a reused mapping id", trace(["m", 0, 4096], ["u", 0], ["m", 0, 4096]), /already used/],
  ["a live mapping id used again", trace(["m", 0, 10], ["m", 0, 10]), /already used/],
];

/** Events that are malformed on their own, or out of place. */
export const badEvents: BadTrace[] = [
  ["an unknown limit", trace(["l", "speed", 10]), /limit/],
  ["a bad tag", trace(["x", 0]), /tag/],
  ["a bad id", trace(["a", -1, 1]), /id/],
  ["a header after events", trace(["a", 0, 1], { name: "late" }), /header/],
];
