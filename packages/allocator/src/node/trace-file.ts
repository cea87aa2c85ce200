/// <reference types="node" />
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { TraceError } from "../errors.js";
import {
  type ReplayOptions,
  type ReplayResult,
  replayTrace,
  type TraceEvent,
  type TraceHeader,
} from "../replay.js";

/** A trace read from a file. */
export interface Trace {
  /** The header object of the first line, if the file has one. */
  header: TraceHeader | undefined;
  /** Every event, in order. */
  events: TraceEvent[];
}

const isByteCount = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;

function isTraceEvent(value: unknown): value is TraceEvent {
  if (!Array.isArray(value)) return false;
  switch (value[0]) {
    case "a":
    case "m":
      return value.length === 3 && isByteCount(value[1]) && isByteCount(value[2]);
    case "f":
    case "u":
      return value.length === 2 && isByteCount(value[1]);
    case "l":
      return value.length === 3 && ["memory", "cache", "wired"].includes(value[1]) && isByteCount(value[2]);
    case "c":
    case "p":
      return value.length === 1;
    default:
      return false;
  }
}

/**
 * Reads a trace file: gzipped NDJSON (recognised by its magic bytes, whatever its name) or plain NDJSON.
 *
 * @throws TraceError with code `ERR_NUVEC_TRACE_NOT_FOUND` (missing or unreadable), `ERR_NUVEC_TRACE_EMPTY`
 * (no events) or `ERR_NUVEC_TRACE_CORRUPT` (bad gzip, bad JSON, or a line that is no event; the message
 * names the line).
 */
export function readTrace(path: string): Trace {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new TraceError(
      "ERR_NUVEC_TRACE_NOT_FOUND",
      code === "ENOENT"
        ? `trace file not found: ${path}`
        : `cannot read trace file ${path}: ${code ?? error}`,
      { cause: error },
    );
  }
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipSync(bytes);
    } catch (error) {
      throw new TraceError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${path} is not valid gzip: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
  const lines = bytes.toString("utf8").split("\n");
  let header: TraceHeader | undefined;
  const events: TraceEvent[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.trim();
    if (line === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new TraceError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${path}, line ${index + 1}: not JSON (${(error as Error).message})`,
        { cause: error },
      );
    }
    if (isTraceEvent(value)) {
      events.push(value);
    } else if (header === undefined && events.length === 0 && typeof value === "object" && value !== null) {
      if (Array.isArray(value)) {
        throw new TraceError(
          "ERR_NUVEC_TRACE_CORRUPT",
          `trace file ${path}, line ${index + 1}: not an event`,
        );
      }
      header = value as TraceHeader;
    } else {
      throw new TraceError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${path}, line ${index + 1}: not an event (["a", id, bytes], ["f", id], or a Device's "m", "u", "l", "c", "p"): ${line.slice(0, 80)}`,
      );
    }
  }
  if (events.length === 0) throw new TraceError("ERR_NUVEC_TRACE_EMPTY", `trace file ${path} has no events`);
  return { header, events };
}

/** Reads a trace file and replays it (see `replayTrace`); the result's `nsPerEvent` excludes the reading. */
export function replayTraceFile(path: string, options: ReplayOptions = {}): ReplayResult {
  const trace = readTrace(path);
  const result = replayTrace(trace.events, options);
  return { ...result, header: trace.header };
}
