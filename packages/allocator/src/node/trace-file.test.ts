import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../test/support.js";
import { readTrace, replayTraceFile } from "../node.js";

const { folder, write } = scratchFolder("nuvec-trace-");

const text = `${JSON.stringify({ name: "tiny", events: 3 })}\n["a",0,1000]\n["a",1,20]\n["f",0]\n`;

describe("readTrace", () => {
  it("reads gzipped NDJSON (by its magic bytes) and plain NDJSON alike", () => {
    const expected = {
      header: { name: "tiny", events: 3 },
      events: [
        ["a", 0, 1000],
        ["a", 1, 20],
        ["f", 0],
      ],
    };
    for (const trace of [
      readTrace(write("tiny.ndjson.gz", gzipSync(text))),
      readTrace(write("tiny.ndjson", text)),
      readTrace(write("tiny-gz-without-suffix", gzipSync(text))),
    ]) {
      expect(trace).toMatchObject(expected);
      // The same Trace a recording gives: its NDJSON is the file's text.
      expect(trace.toNdjson()).toBe(text);
    }
  });

  it("accepts a trace without a header and with CRLF line ends", () => {
    expect(readTrace(write("bare.ndjson", '["a",0,1]\r\n["f",0]\r\n'))).toMatchObject({
      header: undefined,
      events: [
        ["a", 0, 1],
        ["f", 0],
      ],
    });
  });

  it("reads the extra kinds a Device records (map, unmap, limit, clear, reset)", () => {
    const lines = '["a",0,1]\n["m",0,4096]\n["l","wired",0]\n["c"]\n["p"]\n["u",0]\n["f",0]\n';
    expect(readTrace(write("device.ndjson", lines)).events).toEqual([
      ["a", 0, 1],
      ["m", 0, 4096],
      ["l", "wired", 0],
      ["c"],
      ["p"],
      ["u", 0],
      ["f", 0],
    ]);
  });

  it.each([
    [
      "an unknown limit kind",
      () => write("limit.ndjson", '["l","speed",1]\n'),
      "ERR_NUVEC_TRACE_CORRUPT",
      /line 1/,
    ],
    ["an unknown tag", () => write("tag.ndjson", '["z",1]\n'), "ERR_NUVEC_TRACE_CORRUPT", /line 1/],
    ["a missing file", () => join(folder, "absent.ndjson.gz"), "ERR_NUVEC_TRACE_NOT_FOUND", /not found/],
    ["an empty file", () => write("empty.ndjson", ""), "ERR_NUVEC_TRACE_EMPTY", /no events/],
    ["a header only", () => write("header.ndjson", '{"name":"x"}\n'), "ERR_NUVEC_TRACE_EMPTY", /no events/],
    [
      "broken gzip",
      () => write("broken.gz", Buffer.from([0x1f, 0x8b, 1, 2, 3])),
      "ERR_NUVEC_TRACE_CORRUPT",
      /gzip/,
    ],
    ["bad JSON", () => write("bad.ndjson", '["a",0,1]\n["a",1,\n'), "ERR_NUVEC_TRACE_CORRUPT", /line 2/],
    [
      "a line that is no event",
      () => write("odd.ndjson", '["a",0,1]\n["a",1]\n'),
      "ERR_NUVEC_TRACE_CORRUPT",
      /line 2/,
    ],
    ["a negative size", () => write("negative.ndjson", '["a",0,-1]\n'), "ERR_NUVEC_TRACE_CORRUPT", /line 1/],
  ])("refuses %s with a clear FormatError", (_name, makePath, code, message) => {
    const path = makePath();
    expect(thrown(() => readTrace(path))).toMatchObject({
      name: "FormatError",
      code,
      message: expect.stringMatching(message),
    });
  });
});

describe("replayTraceFile", () => {
  it("reads and replays, returning the file's header", () => {
    const result = replayTraceFile(write("replay.ndjson.gz", gzipSync(text)));
    expect(result.header).toEqual({ name: "tiny", events: 3 });
    expect(result.stats).toMatchObject({ active: 256, cache: 1024, systemAllocations: 2 });
  });
});
