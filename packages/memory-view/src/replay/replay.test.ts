// The view's replay: every policy's figures are the allocator's own replay's, the device's facts come from
// the trace's header unless given, and marks and mapped files are recorded where they happen.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ALLOCATOR_POLICIES, FormatError, replayTrace } from "@nuvec/allocator";
import { readTrace, streamTraceBatches } from "@nuvec/allocator/node";
import { describe, expect, it } from "vitest";
import { root, scratchFolder } from "../../test/support.js";
import { MARKS_IN_FORMAT, streamFilteringMarks, streamMarkedTrace } from "./marked-trace.js";
import { replayForView } from "./replay.js";

const folder = scratchFolder("nuvec-view-replay-");
const resnet = join(root, "fixtures", "traces", "resnet50-train.ndjson.gz");
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

/** A header as a Device records it: the allocator's setup on a 1 GiB device. */
const recorded = {
  name: "recorded",
  workload: "a test's workload",
  device: "host memory (test)",
  allocator: {
    policy: "mlx",
    reserveRatio: 1.2,
    boundedRelease: "fitting",
    workingSet: GiB,
    memorySize: 2 * GiB,
    maxBufferLength: GiB,
    resourceLimit: 499_000,
    pageSize: 16 * 1024,
    memoryLimit: 256 * MiB,
    cacheLimit: 64 * MiB,
    fresh: true,
  },
};

describe("replayForView", () => {
  it("replays every policy to the allocator's own figures, in one pass", async () => {
    const result = await replayForView(streamTraceBatches(resnet), { policies: ALLOCATOR_POLICIES });
    expect(result.events).toBe(5024);
    expect(result.device).toMatchObject({ from: "default", workingSet: 8 * GiB, memorySize: 16 * GiB });
    const events = readTrace(resnet).events;
    for (const outcome of result.outcomes) {
      const alone = replayTrace(events, { policy: outcome.policy as (typeof ALLOCATOR_POLICIES)[number] });
      expect(outcome.stats, outcome.policy).toEqual(alone.stats);
      expect(outcome.cacheHits).toBe(alone.counters.cacheHits);
      expect(outcome.peakLive).toBe(alone.counters.peakLive);
    }
  });

  it("takes the device, its limits and the policy's settings from the header; given options win", async () => {
    const items = [recorded, ["a", 0, 200 * MiB], ["a", 1, 100 * MiB], ["f", 0], ["a", 2, 60 * MiB]];
    const fromHeader = await replayForView([items], { policies: ["mlx"] });
    expect(fromHeader.device).toEqual({
      from: "header",
      name: "host memory (test)",
      policy: "mlx",
      workingSet: GiB,
      memorySize: 2 * GiB,
      maxBufferLength: GiB,
      resourceLimit: 499_000,
      pageSize: 16 * 1024,
      memoryLimit: 256 * MiB,
      cacheLimit: 64 * MiB,
    });
    // 200 MiB live, then 100 MiB more is past the 256 MiB limit: refused, counted; its id's events skipped.
    const [outcome] = fromHeader.outcomes;
    expect(outcome?.outOfMemoryRefusals).toBe(1);
    expect(outcome?.stats.memoryLimit).toBe(256 * MiB);
    expect(outcome?.stats.cacheLimit).toBe(64 * MiB);
    const given = await replayForView([items], {
      policies: ["mlx"],
      memoryLimit: 512 * MiB,
      workingSet: 4 * GiB,
    });
    expect(given.device).toMatchObject({ workingSet: 4 * GiB, memoryLimit: 512 * MiB, memorySize: 2 * GiB });
    expect(given.outcomes[0]?.outOfMemoryRefusals).toBe(0);
  });

  it("records marks before the event they precede, and mapped files as their own series", async () => {
    const items = [
      { name: "marked" },
      ["k", "step 0"],
      ["a", 0, 4096],
      ["m", 1, 10 * MiB],
      ["k", "step 1"],
      ["f", 0],
      ["u", 1],
      ["a", 2, 8192],
      ["k", "end"],
    ];
    const result = await replayForView([items], { policies: ["mlx", "bounded"], record: true });
    expect(result.marks).toBe(3);
    expect(result.events).toBe(MARKS_IN_FORMAT ? 8 : 5);
    // Where the format has marks the validator counts each as an event; the view's axis counts none.
    expect(result.workload?.events).toBe(5);
    // The workload's own events, what the program prints: the same five, recorded or not.
    expect(result.workloadEvents).toBe(5);
    expect([...(result.workload?.marks?.at ?? [])]).toEqual([0, 2, 5]);
    expect(result.workload?.marks?.names).toEqual(["step 0", "step 1", "end"]);
    expect([...(result.workload?.mapped?.at ?? [])]).toEqual([1, 3]);
    expect([...(result.workload?.mapped?.value ?? [])]).toEqual([10 * MiB, 0]);
    // An item that looks like a mark but is none is an event the validator refuses.
    await expect(
      replayForView([[{ name: "x" }, ["a", 0, 1], ["k", 5]]], { policies: ["mlx"] }),
    ).rejects.toThrow(FormatError);
  });

  it("reads marks from a trace file, gzipped or not, at the events where they stand (both readers)", async () => {
    const lines = [
      { name: "marked file" },
      ["k", "step 0"],
      ["a", 0, 4096],
      ["a", 1, 4096],
      ["k", "step 1"],
      ["f", 0],
      ["k", "after"],
    ];
    const text = `${lines.map((line) => JSON.stringify(line)).join("\r\n")}\n`;
    for (const [name, bytes] of [
      ["marked.ndjson", Buffer.from(text)],
      ["marked.ndjson.gz", gzipSync(text)],
    ] as const) {
      const path = join(folder, name);
      writeFileSync(path, bytes);
      for (const reader of [streamMarkedTrace, streamFilteringMarks]) {
        const items: unknown[] = [];
        for await (const batch of reader(path)) items.push(...batch);
        expect(items, `${name}, ${reader.name}`).toEqual(lines);
      }
    }
    for (const reader of [streamMarkedTrace, streamFilteringMarks]) {
      const missing = reader(join(folder, "none.ndjson"));
      await expect(missing.next()).rejects.toMatchObject({ code: "ERR_NUVEC_TRACE_NOT_FOUND" });
      await expect(reader(folder).next()).rejects.toMatchObject({ code: "ERR_NUVEC_TRACE_NOT_A_FILE" });
      const corrupt = join(folder, "corrupt.ndjson");
      writeFileSync(corrupt, '{"name":"c"}\n["a",0,1]\n["k"\n');
      await expect(
        (async () => {
          for await (const _ of reader(corrupt));
        })(),
      ).rejects.toMatchObject({ code: "ERR_NUVEC_TRACE_CORRUPT" });
    }
  });
});
