import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tracesDir } from "../test/support.js";
import { readTrace } from "./node.js";
import { type ReplayOptions, replayTrace } from "./replay.js";
import type { TraceEvent } from "./trace-format.js";

// The configurations and the MLX-policy figures of fixtures/traces/README.md, verbatim.
const configurations: Record<string, ReplayOptions> = {
  default: { workingSet: 8589934592, memorySize: 17179869184 },
  cache64: { workingSet: 8589934592, memorySize: 17179869184, cacheLimit: 67108864 },
  small: { workingSet: 536870912, memorySize: 1073741824, memoryLimit: 8589934592 },
};

const table = `
| gpt2-generate | default | 135554 | 294625792 | 34603008 | 365304576 | 679 | 67099 | 399907584 |
| gpt2-generate | cache64 | 135554 | 294625792 | 34603008 | 67221504 | 687 | 67091 | 360775168 |
| gpt2-generate | small | 135554 | 294625792 | 34603008 | 365304576 | 679 | 67099 | 399907584 |
| bert-dynamic | default | 23534 | 317974016 | 0 | 2020200448 | 587 | 11180 | 2020200448 |
| bert-dynamic | cache64 | 23534 | 317974016 | 0 | 106997248 | 2358 | 9409 | 374865664 |
| bert-dynamic | small | 23534 | 317974016 | 0 | 488696576 | 667 | 11100 | 510014208 |
| resnet50-train | default | 5024 | 2993184768 | 0 | 5051932160 | 808 | 1704 | 5051932160 |
| resnet50-train | cache64 | 5024 | 2993168384 | 0 | 134529024 | 2072 | 440 | 3048206336 |
| resnet50-train | small | 5024 | 2993168384 | 0 | 563503104 | 2216 | 296 | 2993168384 |
`;

/** How each column of the tables reads a replay's result. */
const columns = {
  events: (result) => result.events,
  peak: (result) => result.stats.peakActive,
  active: (result) => result.stats.active,
  cache: (result) => result.stats.cache,
  systemAllocations: (result) => result.stats.systemAllocations,
  released: (result) => result.counters.systemReleases,
  hits: (result) => result.counters.cacheHits,
  peakReserved: (result) => result.stats.peakReserved,
} satisfies Record<string, (result: ReturnType<typeof replayTrace>) => number>;
type Column = keyof typeof columns;
type Row = { trace: string; configuration: string } & Partial<Record<Column, number>>;

/** The rows of a table whose cells after the trace and the configuration are the given columns. */
const parseTable = (text: string, names: Column[]): Row[] =>
  text
    .trim()
    .split("\n")
    .map((line) => {
      const [trace, configuration, ...numbers] = line
        .split("|")
        .map((cell) => cell.trim())
        .filter((cell) => cell !== "");
      const figures = Object.fromEntries(names.map((name, index) => [name, Number(numbers[index])]));
      return { trace: trace!, configuration: configuration!, ...figures };
    });

/** A replay's figures in the columns of `row`, with its trace and configuration. */
const figuresOf = (row: Row, result: ReturnType<typeof replayTrace>) =>
  Object.fromEntries(
    Object.keys(row).map((key) => [
      key,
      key in columns ? columns[key as Column](result) : row[key as "trace"],
    ]),
  );

const rows = parseTable(table, [
  "events",
  "peak",
  "active",
  "cache",
  "systemAllocations",
  "hits",
  "peakReserved",
]);

const traces = new Map<string, TraceEvent[]>();
function eventsOf(trace: string): TraceEvent[] {
  let events = traces.get(trace);
  if (events === undefined) {
    events = readTrace(resolve(tracesDir, `${trace}.ndjson.gz`)).events;
    traces.set(trace, events);
  }
  return events;
}
/** The allocations of a trace (its events less the frees): each is a hit or a miss. */
const allocationsOf = (trace: string) => eventsOf(trace).filter((event) => event[0] !== "f").length;

describe("the shared traces under the MLX policy (fixtures/traces/README.md)", () => {
  it.each(rows)("$trace / $configuration gives exactly the table's figures", (row) => {
    const result = replayTrace(eventsOf(row.trace), { ...configurations[row.configuration], policy: "mlx" });
    expect(figuresOf(row, result)).toEqual(row);
    expect(result.counters.cacheHits + result.counters.cacheMisses).toBe(allocationsOf(row.trace));
  });

  it("the headers agree with the events (peak_live_bytes of requested sizes is a lower bound of peak)", () => {
    for (const trace of ["gpt2-generate", "bert-dynamic", "resnet50-train"]) {
      const { header, events } = readTrace(resolve(tracesDir, `${trace}.ndjson.gz`));
      expect(header?.events).toBe(events.length);
      const result = replayTrace(events, { ...configurations.default, policy: "mlx" });
      expect(result.counters.peakLive).toBeGreaterThanOrEqual(header?.peak_live_bytes as number);
    }
  });
});

describe("the shared traces under the bounded policy", () => {
  // The default (reserved within 1.2 × live, release order "fitting"), and the two other release orders
  // where they meet the same targets (least recent first makes more system allocations than MLX on resnet).
  const variants = [
    { variant: "default", options: {} },
    { variant: "largest first", options: { boundedRelease: "largest" } },
  ] as const;
  it.each(rows.flatMap((row) => variants.map((variant) => ({ ...row, ...variant }))))(
    "$trace / $configuration, $variant: peakReserved ≤ 1.2 × peakLive, no more system allocations than MLX's $systemAllocations",
    (row) => {
      const result = replayTrace(eventsOf(row.trace), {
        ...configurations[row.configuration],
        ...row.options,
        policy: "bounded",
      });
      expect(result.stats.peakReserved).toBeLessThanOrEqual(1.2 * result.counters.peakLive);
      expect(result.stats.systemAllocations).toBeLessThanOrEqual(row.systemAllocations!);
      expect(result.stats.active).toBe(row.active); // the same live buffers at the end
    },
  );

  it("gives the README's figures with the default configuration (reserved/live, system allocations vs MLX)", () => {
    const figures = ["gpt2-generate", "bert-dynamic", "resnet50-train"].map((trace) => {
      const mlx = replayTrace(eventsOf(trace), { ...configurations.default, policy: "mlx" });
      const bounded = replayTrace(eventsOf(trace), { ...configurations.default, policy: "bounded" });
      return [
        trace,
        (bounded.stats.peakReserved / bounded.counters.peakLive).toFixed(2),
        (bounded.stats.systemAllocations / mlx.stats.systemAllocations).toFixed(2),
      ];
    });
    expect(figures).toEqual([
      ["gpt2-generate", "1.03", "0.30"],
      ["bert-dynamic", "1.20", "0.47"],
      ["resnet50-train", "1.20", "0.95"],
    ]);
  });
});

// The same over a source that maps memory into reserved address space (2 MiB granules, as CUDA): the large
// pool is one expandable segment. The "small" device's space is its 1 GiB of memory: resnet's larger requests
// then take fixed segments of their own. Columns as above; segments = system allocations (map calls and
// small segments).
const expandableTable = `
| gpt2-generate | default | 135554 | 294456832 | 34603008 | 267386880 | 18 | 0 | 67760 | 301989888 |
| gpt2-generate | cache64 | 135554 | 294456832 | 34603008 | 53477376 | 18 | 12 | 67760 | 301989888 |
| gpt2-generate | small | 135554 | 294456832 | 34603008 | 267386880 | 18 | 0 | 67760 | 301989888 |
| bert-dynamic | default | 23534 | 317962752 | 0 | 356515840 | 21 | 0 | 11746 | 356515840 |
| bert-dynamic | cache64 | 23534 | 317962752 | 0 | 54525952 | 736 | 732 | 11048 | 356515840 |
| bert-dynamic | small | 23534 | 317962752 | 0 | 356515840 | 21 | 0 | 11746 | 356515840 |
| resnet50-train | default | 5024 | 2993617408 | 0 | 3070230528 | 96 | 0 | 2416 | 3070230528 |
| resnet50-train | cache64 | 5024 | 2993617408 | 0 | 62914560 | 674 | 664 | 1845 | 3051356160 |
| resnet50-train | small | 5024 | 2995649024 | 0 | 796917760 | 194 | 171 | 2318 | 3175088128 |
`;

// The segments policy's figures on the shared traces, pinned to the byte: events, peak, active, cache,
// segments acquired, segments released, blocks served from held segments, peak reserved. A Device over the
// CUDA backend gives the same figures on the GPU (the cuda-native README's bench, default configuration).
const segmentsTable = `
| gpt2-generate | default | 135554 | 298002432 | 34603008 | 271581184 | 10 | 0 | 67768 | 306184192 |
| gpt2-generate | cache64 | 135554 | 298002432 | 34603008 | 11534336 | 10 | 8 | 67768 | 306184192 |
| gpt2-generate | small | 135554 | 298002432 | 34603008 | 271581184 | 10 | 0 | 67768 | 306184192 |
| bert-dynamic | default | 23534 | 319928832 | 0 | 373293056 | 13 | 2 | 11754 | 373293056 |
| bert-dynamic | cache64 | 23534 | 319928832 | 0 | 46137344 | 228 | 226 | 11539 | 377487360 |
| bert-dynamic | small | 23534 | 319928832 | 0 | 373293056 | 13 | 2 | 11754 | 373293056 |
| resnet50-train | default | 5024 | 2996828672 | 0 | 3200253952 | 86 | 25 | 2426 | 3225419776 |
| resnet50-train | cache64 | 5024 | 2994731520 | 0 | 62914560 | 401 | 395 | 2111 | 3254779904 |
| resnet50-train | small | 5024 | 2995780096 | 0 | 780140544 | 208 | 180 | 2304 | 3208642560 |
`;

const segmentColumns: Column[] = [
  "events",
  "peak",
  "active",
  "cache",
  "systemAllocations",
  "released",
  "hits",
  "peakReserved",
];
const segmentRows = parseTable(segmentsTable, segmentColumns);
const expandableRows = parseTable(expandableTable, segmentColumns);

describe("the shared traces under the segments policy", () => {
  it.each(segmentRows)("$trace / $configuration gives exactly the pinned figures", (row) => {
    const result = replayTrace(eventsOf(row.trace), {
      ...configurations[row.configuration],
      policy: "segments",
    });
    expect(figuresOf(row, result)).toEqual(row);
    // Every allocation is a hit (a block of a held segment) or a miss (a new segment).
    expect(result.counters.cacheHits + result.counters.cacheMisses).toBe(allocationsOf(row.trace));
    expect(result.counters.cacheMisses).toBe(result.stats.systemAllocations);
  });

  it.each(expandableRows)(
    "$trace / $configuration over address spaces gives exactly the pinned figures",
    (row) => {
      const result = replayTrace(eventsOf(row.trace), {
        ...configurations[row.configuration],
        policy: "segments",
        mapGranularity: 2 * 1024 * 1024,
      });
      expect(figuresOf(row, result)).toEqual(row);
    },
  );

  it("reserves less than PyTorch's default allocator and far less than the MLX policy, with far fewer system allocations", () => {
    // PyTorch 2.11's max_memory_reserved() on the H200 for the same traces (gpu/torch_replay.py).
    const pytorchDefault: Record<string, number> = {
      "bert-dynamic": 476053504,
      "gpt2-generate": 316669952,
      "resnet50-train": 3617587200,
    };
    for (const row of rows.filter((candidate) => candidate.configuration === "default")) {
      const segments = replayTrace(eventsOf(row.trace), { ...configurations.default, policy: "segments" });
      expect(segments.stats.peakReserved).toBeLessThanOrEqual(pytorchDefault[row.trace]!);
      expect(segments.stats.peakReserved).toBeLessThan(row.peakReserved!);
      expect(segments.stats.systemAllocations * 3).toBeLessThan(row.systemAllocations!);
    }
  });
});
