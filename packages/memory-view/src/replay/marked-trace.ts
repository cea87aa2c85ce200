// A trace file read as a stream with its marks (`["k", name]` lines: a step, a phase) kept. The allocator's
// reader takes the events (its line checks, its bounds); the marks are taken out of the text before it sees
// them, each with the number of events before it, and put back into the batches at their place. Where the
// allocator's trace format knows marks itself, its reader is used as it is.
import { closeSync, constants, createReadStream, fstatSync, openSync, readSync } from "node:fs";
import { createGunzip } from "node:zlib";
import { FormatError, isTraceEvent, type TraceEvent, type TraceHeader } from "@nuvec/allocator";
import { streamTraceBatches } from "@nuvec/allocator/node";
import { isMark } from "./replay.js";

/** Whether the allocator's trace format reads marks itself. */
export const MARKS_IN_FORMAT = isTraceEvent(["k", "step"]);
// A line longer than this is no mark, and no line the allocator's reader takes (its limit is 1 MiB).
const LONGEST_LINE = 1024 * 1024 + 2;

function openChecked(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new FormatError(
      "ERR_NUVEC_TRACE_NOT_FOUND",
      code === "ENOENT" || code === "ENOTDIR"
        ? `trace file not found: ${path}`
        : `cannot read trace file ${path}: ${code ?? error}`,
      { cause: error },
    );
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new FormatError(
      "ERR_NUVEC_TRACE_NOT_A_FILE",
      `trace file ${path} is not a regular file (a FIFO, a device or a directory is never read)`,
    );
  }
  return fd;
}

/**
 * The trace at `path` in batches of items (the header first, events, and `["k", name]` marks where they
 * stand). Memory: one chunk of input, one line pending and the marks not yet handed on.
 *
 * @throws FormatError as the allocator's `streamTraceBatches` (from the iteration).
 */
export async function* streamMarkedTrace(path: string): AsyncGenerator<readonly unknown[], void, undefined> {
  if (MARKS_IN_FORMAT) yield* streamTraceBatches(path);
  else yield* streamFilteringMarks(path);
}

/**
 * {@link streamMarkedTrace} for a trace format without marks: the marks taken out of the text before the
 * allocator's reader sees it, each put back before the event it preceded.
 */
export async function* streamFilteringMarks(
  path: string,
): AsyncGenerator<readonly unknown[], void, undefined> {
  const fd = openChecked(path);
  const magic = Buffer.alloc(2);
  const got = readSync(fd, magic, 0, 2, 0);
  const gzip = got === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
  // Marks found and not yet handed on, each with the events before it.
  const marks: [number, string][] = [];
  async function* text(): AsyncGenerator<Uint8Array> {
    const raw = createReadStream("", { fd, start: 0, highWaterMark: 64 * 1024 });
    const source = gzip ? raw.pipe(createGunzip()) : raw;
    source.on("error", () => {});
    let pending = "";
    let events = 0;
    let seenFirst = false;
    const decoder = new TextDecoder("utf-8");
    try {
      for await (const chunk of source) {
        const joined = pending + decoder.decode(chunk as Buffer, { stream: true });
        let kept = "";
        let start = 0;
        for (let end = joined.indexOf("\n"); end !== -1; end = joined.indexOf("\n", start)) {
          const line = joined.slice(start, end);
          const trimmed = line.trim();
          start = end + 1;
          if (trimmed === "") {
            kept += `${line}\n`;
            continue;
          }
          if (trimmed.startsWith('["k"')) {
            let value: unknown;
            try {
              value = JSON.parse(trimmed);
            } catch {
              value = undefined;
            }
            if (isMark(value)) {
              marks.push([events, value[1]]);
              continue;
            }
          }
          // The first line may be the header; every other line the reader takes is one event.
          if (seenFirst || !trimmed.startsWith("{")) events += 1;
          seenFirst = true;
          kept += `${line}\n`;
        }
        pending = joined.slice(start);
        // An over-long line goes on to the reader, which refuses it.
        if (pending.length > LONGEST_LINE) {
          kept += pending;
          pending = "";
        }
        if (kept !== "") yield Buffer.from(kept, "utf8");
      }
      const last = pending + decoder.decode();
      if (last !== "") yield Buffer.from(last, "utf8");
    } catch (error) {
      if (error instanceof FormatError) throw error;
      const code = (error as NodeJS.ErrnoException).code ?? "";
      throw new FormatError(
        "ERR_NUVEC_TRACE_CORRUPT",
        gzip && code.startsWith("Z_")
          ? `trace file ${path} is not valid gzip: ${(error as Error).message}`
          : `cannot read trace file ${path}: ${error}`,
        { cause: error },
      );
    } finally {
      raw.destroy();
    }
  }
  let events = 0;
  let next = 0;
  for await (const batch of streamTraceBatches(text(), { name: path })) {
    const items: unknown[] = [];
    for (const item of batch as (TraceEvent | TraceHeader)[]) {
      if (Array.isArray(item)) {
        while (next < marks.length && (marks[next] as [number, string])[0] <= events) {
          items.push(["k", (marks[next] as [number, string])[1]]);
          next += 1;
        }
        events += 1;
      }
      items.push(item);
    }
    marks.splice(0, next);
    next = 0;
    yield items;
  }
  // Marks after the last event.
  if (marks.length > 0) yield marks.map(([, name]) => ["k", name]);
}
