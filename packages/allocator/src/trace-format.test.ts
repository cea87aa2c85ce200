import { describe, expect, it } from "vitest";
import { replayTrace } from "./replay.js";
import { type TraceEvent, type TraceHeader, TraceLineParser } from "./trace-format.js";
import { TraceRecorder } from "./trace-recorder.js";

/** What the parser reads back from a trace's NDJSON: its header, then its events. */
function readBack(name: string, trace: { toNdjson(): string }): (TraceEvent | TraceHeader)[] {
  const parser = new TraceLineParser(name, 1024);
  const items: (TraceEvent | TraceHeader)[] = [];
  parser.push(trace.toNdjson(), items);
  parser.end(items);
  return items;
}

describe("TraceRecorder and TraceLineParser: one format, written and read back", () => {
  it("records dense ids by object, opens with what was live, and reads back to the same events", () => {
    const early = {};
    const file = {};
    const recorder = new TraceRecorder("round-trip", { buffers: [[early, 1000]], mappings: [[file, 5]] });
    const [a, b] = [{}, {}];
    expect(recorder.allocate(a, 300)).toBe(1);
    expect(recorder.allocate(b, 20000)).toBe(2);
    recorder.free(a);
    recorder.free({}); // never seen: ignored
    recorder.limit("cache", 4096);
    recorder.clearCache();
    recorder.resetPeak();
    recorder.unmap(file);
    recorder.free(early);
    const trace = recorder.finish();
    expect(trace.events).toEqual([
      ["a", 0, 1000],
      ["m", 0, 5],
      ["a", 1, 300],
      ["a", 2, 20000],
      ["f", 1],
      ["l", "cache", 4096],
      ["c"],
      ["p"],
      ["u", 0],
      ["f", 0],
    ]);
    expect(trace.header).toMatchObject({
      name: "round-trip",
      events: 10,
      opening_events: 2,
      allocations: 3,
      live_at_end: 1,
      mapped_at_end: 0,
      peak_live_bytes: 21300,
    });
    const items = readBack("round-trip", trace);
    expect(items).toEqual([trace.header, ...trace.events]);
    // And a replay applies it: b (20000 → 32768 bytes) stays active; the opening buffer (1000 → 1024),
    // freed after the clear, is cached under the 4096-byte cache limit.
    expect(replayTrace(items).stats).toMatchObject({
      active: 32768,
      mapped: 0,
      cache: 1024,
      cacheLimit: 4096,
    });
  });

  it("records a quarantine and its give-back by object, and reads them back", () => {
    const recorder = new TraceRecorder("quarantine");
    const [moved, other] = [{}, {}];
    recorder.allocate(moved, 4096);
    recorder.allocate(other, 100);
    recorder.quarantine(moved);
    recorder.quarantine({}); // never seen: ignored
    recorder.giveBack(other); // never quarantined: ignored
    recorder.giveBack(moved);
    recorder.giveBack(moved); // once only
    const trace = recorder.finish();
    expect(trace.events).toEqual([
      ["a", 0, 4096],
      ["a", 1, 100],
      ["q", 0],
      ["r", 0],
    ]);
    expect(trace.header).toMatchObject({ live_at_end: 1, peak_live_bytes: 4196 });
    const items = readBack("quarantine", trace);
    expect(items).toEqual([trace.header, ...trace.events]);
    expect(replayTrace(items).stats).toMatchObject({ active: 256, cache: 0, quarantined: 0 });
    expect(replayTrace(items.slice(0, 4)).stats).toMatchObject({ active: 256, quarantined: 4096 });
  });
});
