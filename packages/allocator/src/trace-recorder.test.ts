import { describe, expect, it } from "vitest";
import { replayTrace } from "./replay.js";
import { isTraceEvent, type TraceEvent, type TraceHeader, TraceLineParser } from "./trace-format.js";
import { TraceRecorder } from "./trace-recorder.js";
import { CHUNK_WORDS } from "./trace-recorder-chunks.js";
import { TraceValidator } from "./trace-validator.js";

/** What the parser reads back from NDJSON text. */
function parse(text: string): (TraceEvent | TraceHeader)[] {
  const parser = new TraceLineParser("test", 1 << 20);
  const items: (TraceEvent | TraceHeader)[] = [];
  parser.push(text, items);
  parser.end(items);
  return items;
}

/** The items a validator refuses, by message; `undefined` when it takes all. */
function refusal(items: unknown[]): string | undefined {
  const validator = new TraceValidator();
  try {
    for (const item of items) validator.check(item);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe("TraceRecorder: labels, marks and stacks", () => {
  it("defines each label and stack once, before the first event that names it, and marks in place", () => {
    const recorder = new TraceRecorder("annotated", { buffers: [], mappings: [[{}, 4096, "weights.bin"]] });
    const [a, b, c] = [{}, {}, {}];
    recorder.mark("step 0");
    expect(recorder.allocate(a, 100, "kv-cache")).toBe(0);
    expect(recorder.allocate(b, 200, "kv-cache", "at f (x.js:1:1)\nat g (x.js:2:2)")).toBe(1);
    expect(recorder.allocate(c, 300, undefined, "at f (x.js:1:1)\nat g (x.js:2:2)")).toBe(2);
    recorder.free(a);
    recorder.mark("step 0");
    const trace = recorder.finish();
    expect(trace.events).toEqual([
      ["n", 0, "weights.bin"],
      ["m", 0, 4096, 0],
      ["k", "step 0"],
      ["n", 1, "kv-cache"],
      ["a", 0, 100, 1],
      ["s", 0, ["at f (x.js:1:1)", "at g (x.js:2:2)"]],
      ["a", 1, 200, 1, 0],
      ["a", 2, 300, null, 0],
      ["f", 0],
      ["k", "step 0"],
    ]);
    expect(trace.header).toMatchObject({ events: 10, opening_events: 2, allocations: 3, live_at_end: 2 });
    for (const event of trace.events) expect(isTraceEvent(event)).toBe(true);
    const items = parse(trace.toNdjson());
    expect(items).toEqual([trace.header, ...trace.events]);
    expect(refusal(items)).toBeUndefined();
    // The annotations change no figure: the same replay without them.
    const plain = items.filter((item) => !Array.isArray(item) || !"kns".includes(item[0] as string));
    const stripped = plain.map((item) => (Array.isArray(item) ? item.slice(0, 3) : item)) as TraceEvent[];
    expect(replayTrace(items).stats).toEqual(replayTrace(stripped).stats);
    expect(replayTrace(items).events).toBe(10);
  });

  it("decodes the compact form across chunk boundaries, once", () => {
    const recorder = new TraceRecorder("long");
    const count = CHUNK_WORDS; // 1.5 chunks of words at 3 words a pair
    const objects: object[] = [];
    for (let index = 0; index < count; index++) {
      const object = {};
      objects.push(object);
      recorder.allocate(object, index, index % 7 === 0 ? "seven" : undefined);
      if (index % 2 === 1) recorder.free(objects[index - 1] as object);
    }
    const trace = recorder.finish();
    expect(trace.header?.events).toBe(count + count / 2 + 1);
    const events = trace.events;
    expect(events.length).toBe(count + count / 2 + 1);
    expect(events[0]).toEqual(["n", 0, "seven"]);
    expect(events[1]).toEqual(["a", 0, 0, 0]);
    expect(events.at(-1)).toEqual(["f", count - 2]);
    expect(parse(trace.toNdjson()).slice(1)).toEqual(events);
    expect(trace.events).toBe(events); // decoded once
  });

  it("stops at the limit: the whole record that does not fit is dropped, and the header says so", () => {
    const recorder = new TraceRecorder("limited", { buffers: [[{}, 10]], mappings: [] }, { limit: 3 });
    const [a, b] = [{}, {}];
    expect(recorder.allocate(a, 1)).toBe(1);
    recorder.free(a);
    // A new label takes two events: one is left, so nothing of it is recorded, and nothing after.
    expect(recorder.allocate(b, 2, "late")).toBe(-1);
    expect(recorder.limitReached).toBe(true);
    recorder.mark("after");
    recorder.free(b); // never recorded: not counted
    recorder.free(a); // already freed: not counted
    const trace = recorder.finish();
    expect(trace.events).toEqual([
      ["a", 0, 10],
      ["a", 1, 1],
      ["f", 1],
    ]);
    expect(trace.header).toMatchObject({ events: 3, limit: 3, limit_reached: true, events_dropped: 3 });
    expect(refusal(parse(trace.toNdjson()))).toBeUndefined();
  });

  it("hands full chunks to a sink and keeps none; the opening header has no end counts", () => {
    const texts: string[] = [];
    let recorder: TraceRecorder | undefined;
    recorder = new TraceRecorder("sunk", undefined, {
      sink: (words, length) => texts.push((recorder as TraceRecorder).ndjsonOf(words, length)),
      header: { file: "x.ndjson.gz" },
    });
    expect(recorder.openingHeader()).toEqual({
      name: "sunk",
      workload: "recorded by @nuvec/device",
      source: "nuvec Device.startTrace",
      opening_events: 0,
      file: "x.ndjson.gz",
    });
    // Two words an allocation: a chunk holds CHUNK_WORDS / 2 - 2 of them (room is kept for the longest event).
    for (let index = 0; index < CHUNK_WORDS / 2; index++) recorder.allocate({}, 1);
    expect(texts.length).toBe(1);
    const trace = recorder.finish();
    expect(texts.length).toBe(2);
    expect(trace.events).toEqual([]);
    const lines = parse(texts.join(""));
    expect(lines.length).toBe(CHUNK_WORDS / 2);
    expect(lines.at(-1)).toEqual(["a", CHUNK_WORDS / 2 - 1, 1]);
    expect(trace.header).toMatchObject({ events: CHUNK_WORDS / 2, file: "x.ndjson.gz" });
  });
});

describe("TraceValidator: marks, labels and stacks", () => {
  it.each([
    ["a mark without a string name", [["k", 5]], /a mark is/],
    ["a label with a number for text", [["n", 0, 1]], /a label is/],
    ["a stack with a frame that is no string", [["s", 0, ["f", 1]]], /a stack is/],
    [
      "a label defined twice",
      [
        ["n", 0, "x"],
        ["n", 0, "y"],
      ],
      /label id was already defined/,
    ],
    [
      "a stack defined twice",
      [
        ["s", 0, []],
        ["s", 0, []],
      ],
      /stack id was already defined/,
    ],
    ["an allocation naming an undefined label", [["a", 0, 1, 0]], /label id never defined/],
    ["an allocation naming an undefined stack", [["a", 0, 1, null, 3]], /stack id never defined/],
    ["a mapping naming an undefined label", [["m", 0, 1, 2]], /label id never defined/],
    ["a negative label id", [["a", 0, 1, -1]], /not a non-negative integer/],
    ["six fields", [["a", 0, 1, null, 0, 0]], /wrong arity/],
  ])("refuses %s, with nothing recorded", (_, items, message) => {
    const validator = new TraceValidator();
    let error: unknown;
    for (const item of items.slice(0, -1)) validator.check(item);
    const before = validator.events;
    try {
      validator.check(items.at(-1));
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: "ERR_NUVEC_TRACE_EVENT", message: expect.stringMatching(message) });
    expect(validator.events).toBe(before);
    // The refused allocation's id is still free to allocate.
    expect(validator.check(["a", 0, 1])).toEqual(["a", 0, 1]);
  });

  it("reads a labelled allocation on the parser's fast path and a null label through JSON", () => {
    expect(parse('["a",3,4,5]\n["a",4,4,null,0]\n')).toEqual([
      ["a", 3, 4, 5],
      ["a", 4, 4, null, 0],
    ]);
  });
});

describe("TraceRecorder's NDJSON bytes", () => {
  it("are the bytes of the NDJSON text, for every kind, and the chunk is reused", () => {
    const chunks: Float64Array[] = [];
    const texts: string[] = [];
    const recorder: TraceRecorder = new TraceRecorder("bytes", undefined, {
      sink: (words, length) => {
        chunks.push(words);
        const text = recorder.ndjsonOf(words, length);
        const bytes = recorder.ndjsonBytesOf(words, length);
        expect(new TextDecoder().decode(bytes)).toBe(text);
        texts.push(text);
      },
    });
    const objects = Array.from({ length: 3 }, () => ({}));
    recorder.allocate(objects[0] as object, 0);
    recorder.allocate(objects[1] as object, 9_007_199_254_740_991, 'é \u2028 "quoted"');
    recorder.allocate(objects[2] as object, 1_000_000, undefined, "at f\nat g");
    recorder.map({}, 10, "/a/b");
    recorder.limit("wired", 5);
    recorder.clearCache();
    recorder.resetPeak();
    recorder.mark("step 1");
    recorder.quarantine(objects[2] as object);
    recorder.giveBack(objects[2] as object);
    recorder.free(objects[1] as object);
    for (let index = 0; index < CHUNK_WORDS; index++) recorder.allocate({}, index * 12_345);
    recorder.finish();
    expect(chunks.length).toBe(3);
    // The first chunk, given back, is written into again.
    expect(chunks[2]).toBe(chunks[0]);
    const lines = parse(texts.join(""));
    expect(lines.slice(0, 14)).toEqual([
      ["a", 0, 0],
      ["n", 0, 'é \u2028 "quoted"'],
      ["a", 1, 9_007_199_254_740_991, 0],
      ["s", 0, ["at f", "at g"]],
      ["a", 2, 1_000_000, null, 0],
      ["n", 1, "/a/b"],
      ["m", 0, 10, 1],
      ["l", "wired", 5],
      ["c"],
      ["p"],
      ["k", "step 1"],
      ["q", 2],
      ["r", 2],
      ["f", 1],
    ]);
    expect(lines.at(-1)).toEqual(["a", CHUNK_WORDS + 2, (CHUNK_WORDS - 1) * 12_345]);
  });
});
