/// <reference types="node" />

import { constants as bufferConstants } from "node:buffer";
import {
  closeSync,
  constants,
  createReadStream,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
} from "node:fs";
import { pipeline, Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createGunzip, gunzipSync } from "node:zlib";
import { FormatError } from "@nuvec/stats";
import { type ReplayOptions, type ReplayResult, TraceReplay } from "../replay.js";
import {
  DEFAULT_MAX_LINE_LENGTH,
  type Trace,
  type TraceEvent,
  type TraceHeader,
  TraceLineParser,
  traceOf,
} from "../trace-format.js";

export { DEFAULT_MAX_LINE_LENGTH } from "../trace-format.js";

/** How a trace is read as a stream. */
export interface TraceStreamOptions {
  /** The longest line accepted, in characters (a longer one is refused, so memory stays bounded); 1 MiB. */
  maxLineLength?: number;
  /**
   * Called as the input is read: bytes read so far (of the file as stored, compressed or not) and the
   * file's size (`undefined` for a stream).
   */
  onProgress?: (bytesRead: number, totalBytes: number | undefined) => void;
  /** The name used in error messages for a stream source; a path names itself. */
  name?: string;
}

/**
 * Opens a trace file for reading after checking it is a regular file: a FIFO, a device such as `/dev/zero`
 * or a directory is refused before anything is read (opened non-blocking, so a FIFO cannot hang the open,
 * and checked again on the open descriptor, so a file swapped in between is refused too).
 */
function openTraceFile(path: string): { fd: number; size: number } {
  const fail = (error: unknown): never => {
    const code = (error as NodeJS.ErrnoException).code;
    throw new FormatError(
      "ERR_NUVEC_TRACE_NOT_FOUND",
      code === "ENOENT" || code === "ENOTDIR"
        ? `trace file not found: ${path}`
        : `cannot read trace file ${path}: ${code ?? error}`,
      { cause: error },
    );
  };
  const notAFile = () =>
    new FormatError(
      "ERR_NUVEC_TRACE_NOT_A_FILE",
      `trace file ${path} is not a regular file (a FIFO, device or directory cannot be a trace)`,
    );
  let fd: number;
  try {
    if (!statSync(path).isFile()) throw notAFile();
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    if (error instanceof FormatError) throw error;
    return fail(error);
  }
  const stats = fstatSync(fd);
  if (!stats.isFile()) {
    closeSync(fd);
    throw notAFile();
  }
  return { fd, size: stats.size };
}

const isGzip = (bytes: Uint8Array) => bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

/**
 * Reads a whole trace file into memory: gzipped NDJSON (recognised by its magic bytes, whatever its name) or
 * plain NDJSON. For large traces use {@link streamTrace} or {@link replayTraceStream}, whose memory is bounded;
 * this refuses text longer than the longest string Node.js can make.
 *
 * @throws FormatError with code `ERR_NUVEC_TRACE_NOT_FOUND` (missing or unreadable),
 * `ERR_NUVEC_TRACE_NOT_A_FILE` (a FIFO, device or directory), `ERR_NUVEC_TRACE_EMPTY` (no events),
 * `ERR_NUVEC_TRACE_TOO_LARGE` (too large to hold, or a line longer than 1 MiB) or `ERR_NUVEC_TRACE_CORRUPT`
 * (bad gzip, bad JSON, or a line that is no event; the message names the line).
 */
export function readTrace(path: string): Trace {
  const limit = bufferConstants.MAX_STRING_LENGTH;
  const tooLarge = (cause?: unknown) =>
    new FormatError(
      "ERR_NUVEC_TRACE_TOO_LARGE",
      `trace file ${path} is larger than readTrace can hold (${limit} characters): read it with streamTrace or replayTraceStream`,
      { cause },
    );
  const { fd, size } = openTraceFile(path);
  let bytes: Buffer;
  try {
    if (size > limit) throw tooLarge();
    bytes = readFileSync(fd);
  } finally {
    closeSync(fd);
  }
  if (isGzip(bytes)) {
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: limit });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(error);
      throw new FormatError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${path} is not valid gzip: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
  const parser = new TraceLineParser(path, DEFAULT_MAX_LINE_LENGTH);
  const items: (TraceEvent | TraceHeader)[] = [];
  parser.push(bytes.toString("utf8"), items);
  parser.end(items);
  const header = parser.header;
  return traceOf(header, (header === undefined ? items : items.slice(1)) as TraceEvent[]);
}

/** A source of trace bytes: a path, or a stream / async iterable of chunks (gzipped or not). */
export type TraceSource = string | AsyncIterable<Uint8Array>;

/**
 * Reads a trace as a stream, in batches of items (the header object first, when there is one, then events),
 * with bounded memory: one chunk of input and at most one line pending, whatever the trace's length. Lines
 * are checked as {@link readTrace} checks them; id histories are checked by the replay (`TraceValidator`).
 *
 * @throws FormatError as {@link readTrace} (from the iteration), after which the input is closed.
 */
export async function* streamTraceBatches(
  source: TraceSource,
  options: TraceStreamOptions = {},
): AsyncGenerator<(TraceEvent | TraceHeader)[], void, undefined> {
  const name = typeof source === "string" ? source : (options.name ?? "(stream)");
  let raw: Readable;
  let totalBytes: number | undefined;
  let gzip: boolean;
  if (typeof source === "string") {
    const { fd, size } = openTraceFile(source);
    totalBytes = size;
    const magic = Buffer.alloc(2);
    let got: number;
    try {
      got = readSync(fd, magic, 0, 2, 0);
    } catch (error) {
      closeSync(fd);
      throw new FormatError("ERR_NUVEC_TRACE_NOT_FOUND", `cannot read trace file ${source}: ${error}`, {
        cause: error,
      });
    }
    gzip = isGzip(magic.subarray(0, got));
    raw = createReadStream("", { fd, start: 0, highWaterMark: 64 * 1024 });
  } else {
    // Peek at the first chunk for gzip's magic bytes, then hand the whole stream on.
    const iterator = source[Symbol.asyncIterator]();
    const first = await iterator.next();
    const firstChunk = first.done ? new Uint8Array(0) : first.value;
    gzip = isGzip(firstChunk);
    raw = Readable.from(
      (async function* () {
        if (!first.done) yield firstChunk;
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
      })(),
      { objectMode: false },
    );
  }
  let bytesRead = 0;
  const onProgress = options.onProgress;
  raw.on("data", (chunk: Uint8Array) => {
    bytesRead += chunk.length;
    onProgress?.(bytesRead, totalBytes);
  });
  let text: Readable = raw;
  if (gzip) {
    const gunzip = createGunzip();
    pipeline(raw, gunzip, () => {});
    text = gunzip;
  }
  const parser = new TraceLineParser(name, options.maxLineLength ?? DEFAULT_MAX_LINE_LENGTH);
  const decoder = new StringDecoder("utf8");
  try {
    for await (const chunk of text) {
      const items: (TraceEvent | TraceHeader)[] = [];
      parser.push(decoder.write(chunk as Buffer), items);
      if (items.length > 0) yield items;
    }
  } catch (error) {
    if (error instanceof FormatError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? "";
    if (gzip && code.startsWith("Z_")) {
      throw new FormatError(
        "ERR_NUVEC_TRACE_CORRUPT",
        `trace file ${name} is not valid gzip: ${(error as Error).message}`,
        { cause: error },
      );
    }
    throw new FormatError("ERR_NUVEC_TRACE_NOT_FOUND", `cannot read trace file ${name}: ${error}`, {
      cause: error,
    });
  } finally {
    raw.destroy();
    text.destroy();
  }
  const items: (TraceEvent | TraceHeader)[] = [];
  parser.push(decoder.end(), items);
  parser.end(items);
  if (items.length > 0) yield items;
}

/** {@link streamTraceBatches} one item at a time: the header object (if any), then each event. */
export async function* streamTrace(
  source: TraceSource,
  options: TraceStreamOptions = {},
): AsyncGenerator<TraceEvent | TraceHeader, void, undefined> {
  for await (const batch of streamTraceBatches(source, options)) yield* batch;
}

/**
 * Reads a trace as a stream and replays it (see `replayTrace`), with memory bounded by what the trace keeps
 * live, not by its length. The result's `nsPerEvent` excludes the reading.
 */
export async function replayTraceStream(
  source: TraceSource,
  options: ReplayOptions & TraceStreamOptions = {},
): Promise<ReplayResult> {
  const replay = new TraceReplay(options);
  for await (const batch of streamTraceBatches(source, options)) replay.applyAll(batch);
  return replay.result();
}

/** Reads a trace file and replays it (see `replayTrace`); the result's `nsPerEvent` excludes the reading. */
export function replayTraceFile(path: string, options: ReplayOptions = {}): ReplayResult {
  const trace = readTrace(path);
  const replay = new TraceReplay(options);
  if (trace.header !== undefined) replay.apply(trace.header);
  replay.applyAll(trace.events);
  return replay.result();
}
