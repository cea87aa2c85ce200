// The view's timelines on every trace of the repository: aggregated to the chart's columns, the highest value
// drawn is the peak the replay reports, exactly, and the last value drawn is the trace's final state.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ALLOCATOR_POLICIES } from "@nuvec/allocator";
import { streamTraceBatches } from "@nuvec/allocator/node";
import { describe, expect, it } from "vitest";
import { app, root } from "../../test/support.js";
import { replayForView } from "../replay/replay.js";
import { readTorchSnapshot } from "../snapshot/torch-snapshot.js";
import { type ColumnSeries, type Columns, memoryViewCore } from "./core.js";

const traceFolders = [join(root, "fixtures", "traces"), join(app, "traces")];
const traces = traceFolders.flatMap((folder) =>
  readdirSync(folder)
    .filter((name) => /\.(ndjson\.gz|pickle|pickle\.gz)$/.test(name))
    .map((name) => join(folder, name)),
);
const core = memoryViewCore();
const GiB = 1024 ** 3;

const highest = (series: ColumnSeries) => series.max.reduce((peak, value) => Math.max(peak, value), 0);
const lastDrawn = (series: ColumnSeries) => series.last[series.last.length - 1];

async function replay(path: string) {
  const torch = /\.pickle(\.gz)?$/.test(path) ? readTorchSnapshot(path) : undefined;
  const result = await replayForView(torch === undefined ? streamTraceBatches(path) : [torch.items], {
    policies: ALLOCATOR_POLICIES,
    workingSet: 8 * GiB,
    memorySize: 16 * GiB,
    record: true,
  });
  const workload = result.workload;
  if (workload === undefined) throw new Error("nothing recorded");
  if (torch !== undefined) workload.external.push({ name: "PyTorch", ...torch.reserved });
  return { result, model: core.build(workload), torch };
}

describe("the view's timelines on every trace of the repository", () => {
  it("finds the traces, the longest included", () => {
    expect(traces.some((path) => path.endsWith("gpt2-generate.ndjson.gz"))).toBe(true);
    expect(traces.length).toBeGreaterThanOrEqual(5);
  });

  for (const path of traces) {
    const name = path.slice(root.length + 1);
    it(`${name}: the drawn peaks are the reported ones and the last point is the final state`, async () => {
      const { result, model, torch } = await replay(path);
      expect(model.events).toBe(result.events);
      for (const width of [1, 700, 1920, result.events + 5]) {
        const columns: Columns = core.columns(model, 0, model.events, width);
        expect(columns.bounds[0]).toBe(0);
        expect(columns.bounds[columns.count]).toBe(result.events);
        result.outcomes.forEach((outcome, index) => {
          const active = columns.active[index] as ColumnSeries;
          const reserved = columns.reserved[index] as ColumnSeries;
          // No trace here resets the peak, so the reported peaks are over the whole trace.
          expect(highest(active), `${outcome.policy} peak at ${width} columns`).toBe(
            outcome.stats.peakActive,
          );
          expect(highest(reserved), `${outcome.policy} peak reserved`).toBe(outcome.peakReserved);
          expect(lastDrawn(active)).toBe(outcome.stats.active);
          expect(lastDrawn(reserved)).toBe(outcome.stats.active + outcome.stats.cache);
        });
        // The workload's own high-water mark: the live requested bytes at their peak.
        const live = highest(columns.live);
        const header = result.header as { peak_live_bytes?: number } | undefined;
        if (header?.peak_live_bytes !== undefined) expect(live).toBe(header.peak_live_bytes);
        if (torch !== undefined) {
          expect(highest(columns.external[0] as ColumnSeries)).toBe(torch.peakReserved);
          expect(lastDrawn(columns.external[0] as ColumnSeries)).toBe(torch.reserved.value.at(-1));
        }
      }
    });
  }
});

describe("columns", () => {
  // 100,000 events with one allocation of 1 GiB that lives for a single event in the middle.
  const events = 100_000;
  const sizes = new Float64Array(events / 2).fill(4096);
  const start = new Uint32Array(events / 2);
  const end = new Uint32Array(events / 2);
  for (let index = 0; index < events / 2; index += 1) {
    start[index] = 2 * index;
    end[index] = 2 * index + 1;
  }
  sizes[20_000] = GiB;
  const model = core.build({
    events,
    start,
    end,
    size: sizes,
    policies: [
      {
        name: "p",
        charged: sizes,
        reservedAt: Uint32Array.of(0, 40_000, 40_001),
        reservedValue: Float64Array.of(4096, GiB, 4096),
      },
    ],
    external: [],
  });

  it("keeps a one-event spike at any width, at the event that has it", () => {
    for (const width of [1, 3, 999, 1000, 1001]) {
      const columns = core.columns(model, 0, events, width);
      expect(highest(columns.live)).toBe(GiB);
      expect(highest(columns.reserved[0] as ColumnSeries)).toBe(GiB);
      expect(Math.min(...columns.live.min)).toBe(0);
      // The column that holds event 40,000 draws its state there.
      const column = columns.bounds.findIndex((bound) => bound > 40_000) - 1;
      expect(columns.rep[column]).toBe(40_000);
      expect(core.liveAt(model, 40_000)).toEqual([20_000]);
    }
  });

  it("zooms to a range, one column per event when it is narrow", () => {
    const columns = core.columns(model, 39_990, 40_010, 500);
    expect(columns.count).toBe(20);
    expect([...columns.rep]).toEqual(Array.from({ length: 20 }, (_, index) => 39_990 + index));
    expect(columns.live.max[10]).toBe(GiB);
    expect(columns.live.max[9]).toBe(0);
    expect(core.hit(model, 40_000, GiB - 1)).toEqual({ index: 20_000, offset: 0 });
    expect(core.hit(model, 40_000, GiB)).toBeUndefined();
  });

  it("clamps a range outside the trace", () => {
    const columns = core.columns(model, -50, 10 * events, 10);
    expect(columns.from).toBe(0);
    expect(columns.to).toBe(events);
  });

  it("classes sizes and formats bytes", () => {
    expect(core.sizeClass(0)).toBe(0);
    expect(core.sizeClass(64 * 1024)).toBe(1);
    expect(core.sizeClass(GiB)).toBe(5);
    expect(core.formatBytes(1536)).toBe("1.50 KiB");
    expect(core.formatBytes(512)).toBe("512 B");
  });
});
