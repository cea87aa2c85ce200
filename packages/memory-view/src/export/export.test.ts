// The exports, read back: the PyTorch snapshot by the project's own snapshot reader (and by Python's pickle
// where python3 is installed), the Chrome trace as JSON; each figure equal to the replay's.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ALLOCATOR_POLICIES } from "@nuvec/allocator";
import { streamTraceBatches } from "@nuvec/allocator/node";
import { describe, expect, it } from "vitest";
import { root, scratchFolder } from "../../test/support.js";
import type { PolicyRun } from "../replay/policy-run.js";
import { replayForView } from "../replay/replay.js";
import { readSnapshotPickle } from "../snapshot/snapshot-pickle.js";
import { readTorchSnapshot } from "../snapshot/torch-snapshot.js";
import { type ChromeCounterEvent, ChromeTraceExport } from "./chrome.js";
import { writePickle } from "./pickle-writer.js";
import { TorchSnapshotExport } from "./torch.js";

const folder = scratchFolder("nuvec-view-export-");
const resnet = join(root, "fixtures", "traces", "resnet50-train.ndjson.gz");
const hasPython = spawnSync("python3", ["-c", "import pickle"]).status === 0;

async function exportTorch(path: string, policy: string) {
  const exporter = new TorchSnapshotExport();
  const result = await replayForView(streamTraceBatches(path), {
    policies: [policy],
    listeners: [exporter],
    onEvent: (event, _index, applied) => exporter.event(event, applied[0]),
  });
  return { result, ...exporter.finish() };
}

describe("the pickle writer", () => {
  it("writes plain data the snapshot reader reads back as it was", () => {
    const value = {
      text: "ünïcode \u{1f600}",
      small: 7,
      medium: 65_535,
      negative: -5,
      large: 2 ** 40 + 3,
      past32: 2 ** 31,
      float: 0.25,
      flags: [true, false, null],
      long: Array.from({ length: 2500 }, (_, index) => index),
      nested: { list: [{ a: 1 }, []], empty: {} },
    };
    const read = readSnapshotPickle(writePickle(value)) as Map<string, unknown>;
    const plain = (item: unknown): unknown =>
      item instanceof Map
        ? Object.fromEntries([...item].map(([key, inner]) => [key, plain(inner)]))
        : Array.isArray(item)
          ? item.map(plain)
          : typeof item === "bigint"
            ? Number(item)
            : item;
    expect(plain(read)).toEqual(value);
    expect(() => writePickle(2 ** 60)).toThrow(RangeError);
  });
});

describe("--export-torch: a PyTorch memory snapshot", () => {
  for (const policy of ALLOCATOR_POLICIES) {
    it(`${policy}: read back by the snapshot reader, PyTorch's reserved memory is the replay's`, async () => {
      const { result, pickle, counts } = await exportTorch(resnet, policy);
      const [outcome] = result.outcomes;
      if (outcome === undefined) throw new Error("no outcome");
      const path = join(folder, `resnet-${policy}.pickle`);
      writeFileSync(path, pickle);
      const torch = readTorchSnapshot(path);
      // 2,512 allocations and as many frees; every segment made is a system allocation of the replay.
      expect(counts.actions).toMatchObject({ alloc: 2512, free_requested: 2512, free_completed: 2512 });
      expect(counts.actions.segment_alloc ?? 0).toBe(outcome.systemAllocations);
      expect(torch.counts).toMatchObject({ allocations: 2512, frees: 2512, skippedFrees: 0, liveAtEnd: 0 });
      expect(torch.counts.segmentAllocs).toBe(outcome.systemAllocations);
      expect(torch.peakReserved).toBe(outcome.peakReserved);
      expect(torch.reserved.value.at(-1)).toBe(outcome.stats.active + outcome.stats.cache);
      expect(counts.segments).toBe(outcome.stats.systemAllocations - (counts.actions.segment_free ?? 0));
    });
  }

  it.skipIf(!hasPython)(
    "is a snapshot Python's pickle loads: the layout memory_viz reads, every entry consistent",
    async () => {
      const { result, pickle } = await exportTorch(resnet, "segments");
      const path = join(folder, "resnet-python.pickle");
      writeFileSync(path, pickle);
      const check = `
import pickle, sys, json
s = pickle.load(open(sys.argv[1], "rb"))
assert set(s) >= {"segments", "device_traces"}, s.keys()
trace = s["device_traces"][0]
segments, blocks, counts = {}, {}, {}
for e in trace:
    assert set(e) >= {"action", "addr", "size", "stream", "frames"}, e
    assert e["frames"] == [] and e["stream"] == 0
    a = e["action"]; counts[a] = counts.get(a, 0) + 1
    if a == "segment_alloc": segments[e["addr"]] = e["size"]
    elif a == "segment_free": assert segments.pop(e["addr"]) == e["size"]
    elif a == "alloc":
        assert any(base <= e["addr"] and e["addr"] + e["size"] <= base + size for base, size in segments.items()), e
        assert e["addr"] not in blocks; blocks[e["addr"]] = e["size"]
    elif a == "free_requested": assert blocks[e["addr"]] == e["size"]
    elif a == "free_completed": assert blocks.pop(e["addr"]) == e["size"]
    else: raise AssertionError(a)
final = {seg["address"]: seg["total_size"] for seg in s["segments"]}
assert final == segments, (len(final), len(segments))
for seg in s["segments"]:
    assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
    assert {b["state"] for b in seg["blocks"]} <= {"inactive", "active_allocated", "active_pending_free"}
print(json.dumps({"entries": len(trace), "segments": len(s["segments"]), "reserved": sum(final.values()), "counts": counts}))
`;
      const ran = spawnSync("python3", ["-c", check, path], { encoding: "utf8" });
      expect(ran.stderr).toBe("");
      const report = JSON.parse(ran.stdout) as {
        segments: number;
        reserved: number;
        counts: Record<string, number>;
      };
      const [outcome] = result.outcomes;
      expect(report.reserved).toBe((outcome?.stats.active ?? 0) + (outcome?.stats.cache ?? 0));
      expect(report.counts.alloc).toBe(2512);
      expect(report.counts.segment_alloc).toBe(outcome?.systemAllocations);
    },
  );
});

describe("--export-chrome: Chrome trace-event JSON", () => {
  it("holds each policy's counters, equal to the replay's after every event, and the marks", async () => {
    const exporter = new ChromeTraceExport(ALLOCATOR_POLICIES, "resnet50-train");
    const seen: { active: number; cached: number; mapped: number }[][] = [];
    const result = await replayForView(streamTraceBatches(resnet), {
      policies: ALLOCATOR_POLICIES,
      onEvent: (_event, index, _applied, runs: readonly PolicyRun[]) => {
        exporter.event(index, runs);
        seen.push(
          runs.map((run) => {
            const stats = run.allocator.memoryStats();
            return { active: stats.active, cached: stats.cache, mapped: stats.mapped };
          }),
        );
      },
    });
    exporter.mark("the end", result.events);
    const parsed = JSON.parse(exporter.finish()) as {
      traceEvents: (ChromeCounterEvent | { ph: string; name: string; ts: number })[];
    };
    const counters = parsed.traceEvents.filter((event): event is ChromeCounterEvent => event.ph === "C");
    ALLOCATOR_POLICIES.forEach((policy, index) => {
      const track = counters.filter((event) => event.name === `memory (${policy})`);
      // The value at every event: the last counter at or before it.
      let at = 0;
      let current = { active: 0, reserved: 0, cached: 0, mapped: 0 };
      let highest = 0;
      for (let event = 0; event < result.events; event += 1) {
        while (at < track.length && (track[at] as ChromeCounterEvent).ts <= event) {
          current = (track[at] as ChromeCounterEvent).args;
          at += 1;
        }
        const expected = seen[event]?.[index];
        expect(current.active).toBe(expected?.active);
        expect(current.cached).toBe(expected?.cached);
        expect(current.reserved).toBe((expected?.active ?? 0) + (expected?.cached ?? 0));
        highest = Math.max(highest, current.reserved);
      }
      const outcome = result.outcomes[index];
      expect(highest, policy).toBe(outcome?.peakReserved);
      expect(current.active).toBe(outcome?.stats.active);
    });
    expect(parsed.traceEvents.filter((event) => event.ph === "i")).toEqual([
      { name: "the end", ph: "i", s: "p", ts: 5024, pid: 1, tid: 0 },
    ]);
  });
});
