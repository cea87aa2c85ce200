// The seven workloads of fixtures/traces under every policy, configuration "default" (W 8 GiB, M 16 GiB):
// the figures of the README's table of all policies (bench/policy-table.mjs prints it), to the byte, and the
// default policy's targets on each: no more system allocations than MLX's policy, peak reserved within 1.2 ×
// the live peak, and no system allocation growth once the decode loop is in its steady state.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tracesDir } from "../test/support.js";
import { readTrace } from "./node.js";
import { type ReplayOptions, replayTrace } from "./replay.js";
import type { TraceEvent } from "./trace-format.js";

const DEFAULT = { workingSet: 8589934592, memorySize: 17179869184 } as const;

// workload | policy | peak live | peak reserved | system allocations | of them in the second half of the events
// | those of a second pass ("largest": the bounded policy with boundedRelease "largest").
const table = `
| gpt2-generate | bounded | 294593024 | 304075776 | 206 | 0 | 0 |
| gpt2-generate | mlx | 294593024 | 399907584 | 679 | 225 | 0 |
| gpt2-generate | segments | 294593024 | 306184192 | 10 | 1 | 0 |
| gpt2-generate | largest | 294593024 | 304075776 | 206 | 0 | 0 |
| bert-dynamic | bounded | 317974016 | 381143552 | 277 | 6 | 30 |
| bert-dynamic | mlx | 317974016 | 2020200448 | 587 | 166 | 0 |
| bert-dynamic | segments | 317974016 | 373293056 | 13 | 0 | 0 |
| bert-dynamic | largest | 317974016 | 380488192 | 276 | 3 | 45 |
| resnet50-train | bounded | 2993168384 | 3589198080 | 767 | 7 | 299 |
| resnet50-train | mlx | 2993168384 | 5051932160 | 808 | 6 | 0 |
| resnet50-train | segments | 2993168384 | 3225419776 | 86 | 4 | 1 |
| resnet50-train | largest | 2993168384 | 3589050624 | 781 | 31 | 232 |
| inference-loop | bounded | 79920640 | 95881728 | 187 | 21 | 45 |
| inference-loop | mlx | 79920640 | 717201408 | 666 | 317 | 0 |
| inference-loop | segments | 79920640 | 117440512 | 9 | 2 | 0 |
| inference-loop | largest | 79920640 | 95877632 | 200 | 30 | 49 |
| transformer-train | bounded | 2788866560 | 3346083840 | 526 | 63 | 5 |
| transformer-train | mlx | 2788866560 | 4642996224 | 577 | 88 | 0 |
| transformer-train | segments | 2788866560 | 2923429888 | 40 | 5 | 1 |
| transformer-train | largest | 2788866560 | 3331522560 | 526 | 65 | 6 |
| toy-train | bounded | 30409216 | 35651584 | 26 | 2 | 2 |
| toy-train | mlx | 30409216 | 55476736 | 28 | 5 | 0 |
| toy-train | segments | 30409216 | 54525952 | 4 | 0 | 0 |
| toy-train | largest | 30409216 | 35127296 | 24 | 2 | 2 |
| decode-growing | bounded | 97824768 | 117350400 | 355 | 2 | 4 |
| decode-growing | mlx | 97824768 | 1816156416 | 1712 | 0 | 0 |
| decode-growing | segments | 97824768 | 138412032 | 8 | 0 | 0 |
| decode-growing | largest | 97824768 | 116688896 | 347 | 0 | 0 |
`;

const VARIANTS: Record<string, ReplayOptions> = {
  bounded: { policy: "bounded" },
  mlx: { policy: "mlx" },
  segments: { policy: "segments" },
  largest: { policy: "bounded", boundedRelease: "largest" },
};

interface Row {
  workload: string;
  variant: string;
  peakLive: number;
  peakReserved: number;
  systemAllocations: number;
  secondHalf: number;
  secondPass: number;
}

const rows: Row[] = table
  .trim()
  .split("\n")
  .map((line) => {
    const [workload, variant, ...figures] = line
      .split("|")
      .map((cell) => cell.trim())
      .filter((cell) => cell !== "");
    const [peakLive, peakReserved, systemAllocations, secondHalf, secondPass] = figures.map(Number) as [
      number,
      number,
      number,
      number,
      number,
    ];
    return {
      workload: workload!,
      variant: variant!,
      peakLive,
      peakReserved,
      systemAllocations,
      secondHalf,
      secondPass,
    };
  });

const events = new Map<string, ReturnType<typeof readTrace>["events"]>();
const eventsOf = (workload: string) => {
  let read = events.get(workload);
  if (read === undefined) {
    read = readTrace(resolve(tracesDir, `${workload}.ndjson.gz`)).events;
    events.set(workload, read);
  }
  return read;
};

/**
 * The events twice over, as a workload run again from the start (bench/policy-table.mjs's `twoPasses`): what
 * the first pass leaves live is freed, then the same events with ids past the first pass's.
 */
function twoPasses(events: TraceEvent[]): { events: TraceEvent[]; secondStart: number } {
  let nextId = 0;
  const live = new Set<number>();
  for (const event of events) {
    if (event[0] === "a") {
      nextId = Math.max(nextId, event[1] + 1);
      live.add(event[1]);
    } else if (event[0] === "f") live.delete(event[1]);
  }
  const first = [...events, ...[...live].map((id): TraceEvent => ["f", id])];
  const second = events.map(
    (event): TraceEvent =>
      event[0] === "a" ? ["a", event[1] + nextId, event[2]] : ["f", (event[1] as number) + nextId],
  );
  return { events: [...first, ...second], secondStart: first.length };
}

/** The system allocations made at and after event `from` of a replay of `events` with `options`. */
function allocationsFrom(events: TraceEvent[], from: number, options: ReplayOptions) {
  let before = 0;
  const result = replayTrace(events, {
    ...DEFAULT,
    ...options,
    onEvent: (_event, index, allocator) => {
      if (index === from - 1) before = allocator.memoryStats().systemAllocations;
    },
  });
  return { result, made: result.stats.systemAllocations - before };
}

/** A row's figures from replays: system allocations of the second half of the events, and of a second pass. */
function replayed(workload: string, variant: string): Row {
  const all = eventsOf(workload);
  const { result, made: secondHalf } = allocationsFrom(all, Math.floor(all.length / 2), VARIANTS[variant]!);
  const passes = twoPasses(all);
  const secondPass = allocationsFrom(passes.events, passes.secondStart, VARIANTS[variant]!).made;
  return {
    workload,
    variant,
    // The workload's own peak (size classes live at once), which the segments policy counts in its blocks.
    peakLive: variant === "segments" ? resultOf(workload, "mlx").peakLive : result.counters.peakLive,
    peakReserved: result.stats.peakReserved,
    systemAllocations: result.stats.systemAllocations,
    secondHalf,
    secondPass,
  };
}

const results = new Map<string, Row>();
const resultOf = (workload: string, variant: string) => {
  const key = `${workload} ${variant}`;
  let result = results.get(key);
  if (result === undefined) {
    result = replayed(workload, variant);
    results.set(key, result);
  }
  return result;
};

describe("the seven workloads under every policy (the README's table)", () => {
  it.each(rows)("$workload / $variant gives exactly the table's figures", (row) => {
    expect(resultOf(row.workload, row.variant)).toEqual(row);
  });

  const workloads = [...new Set(rows.map((row) => row.workload))];
  it("covers the seven workloads of fixtures/traces", () => {
    expect(workloads).toEqual([
      "gpt2-generate",
      "bert-dynamic",
      "resnet50-train",
      "inference-loop",
      "transformer-train",
      "toy-train",
      "decode-growing",
    ]);
  });

  it.each(workloads.flatMap((workload) => ["bounded", "largest"].map((variant) => ({ workload, variant }))))(
    "$workload / $variant: no more system allocations than MLX's policy, peak reserved ≤ 1.2 × peak live",
    ({ workload, variant }) => {
      const bounded = resultOf(workload, variant);
      const mlx = resultOf(workload, "mlx");
      expect(bounded.systemAllocations).toBeLessThanOrEqual(mlx.systemAllocations);
      expect(bounded.peakReserved).toBeLessThanOrEqual(1.2 * bounded.peakLive);
      expect(bounded.peakLive).toBe(mlx.peakLive);
    },
  );

  it("decode-growing in its steady state: at most 1 system allocation per 1,000 steps under the default", () => {
    // The second half of its events is its last 2,500 steps (to within 10 events).
    for (const variant of ["bounded", "largest"]) {
      expect(resultOf("decode-growing", variant).secondHalf).toBeLessThanOrEqual(2);
    }
    // gpt2's decode loop, from the middle on: none.
    expect(resultOf("gpt2-generate", "bounded").secondHalf).toBe(0);
  });
});
