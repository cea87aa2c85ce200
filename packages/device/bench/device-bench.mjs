#!/usr/bin/env node
// The Device's hot paths, each figure next to its goal:
//   1. malloc(n).free() of a cached size on the host backend, default options (safety net on) and
//      `safetyNet: false`, next to the allocator alone;
//   2. the first contents() of a buffer (an external ArrayBuffer, detached again on free) and repeated calls,
//      the backend's share (the addon alone) and the Device's (over a backend whose views cost nothing);
//   2b. views in loops that never yield: malloc + contents() / bytes() / read() / write() + free() and a mapped
//      file's view at 1,000, 10,000 and 100,000 iterations in one go, the pair right after, a model load;
//   3. a replay program (a trace's allocations and frees through a Device over the mock) against MLX's
//      policy alone on the same pre-read events: warm (one Device and one allocator replaying the trace again,
//      the goal of 2×) and cold (a new Device per replay against `replayTrace`).
// Each figure is the best of three measurements after a warm-up. The host rows run first: the mock rows
// would otherwise make the Device's calls into its backend polymorphic before the goals are measured.
// Run after `pnpm run build`: pnpm --filter @nuvec/device bench   (or: node bench/device-bench.mjs
// [--milliseconds N] [--measurements N]; default 500 ms for the micro rows, twice that for the replays, and
// three measurements)
//
// How each figure is measured is in device-bench-measure.mjs; section 3 in device-bench-replays.mjs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CachingAllocator } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { Device } from "../dist/index.js";
import {
  bestLoop,
  bestOf,
  difference,
  GiB,
  KiB,
  loopOf,
  MEASUREMENTS,
  MILLISECONDS,
  row,
  stopwatch,
} from "./device-bench-measure.mjs";
import { replayRows } from "./device-bench-replays.mjs";

console.log(
  `node ${process.version}; best of ${MEASUREMENTS} measurements of ≥ ${MILLISECONDS} ms each, after a warm-up\n`,
);
console.log("| path | ns | ns, CPU time | goal (ns) |");
console.log("| --- | --- | --- | --- |");

// 1. malloc(n).free() of a cached size.
const allocator = new CachingAllocator({
  recommendedMaxWorkingSetSize: 8 * GiB,
  memorySize: 16 * GiB,
  maxBufferLength: 8 * GiB,
  resourceLimit: 499000,
  pageSize: 16384,
  acquire: (bytes) => ({ bytes }),
  release: () => {},
});
row(
  "allocator alone: free(malloc(64 KiB)), cached",
  bestLoop("context.allocator.free(context.allocator.malloc(context.size));", { allocator, size: 64 * KiB }),
);

let host;
let hostUnsafe;
try {
  host = Device.open();
  hostUnsafe = Device.open({ safetyNet: false });
} catch (error) {
  console.log(`| host backend unavailable: ${error.message} | | | |`);
}
if (host !== undefined) {
  const mallocFree = "context.device.malloc(context.size).free();";
  for (const size of [256, 64 * KiB]) {
    const label = size === 256 ? "256 B" : "64 KiB";
    const safe = bestLoop(mallocFree, { device: host, size });
    row(`host, default options (safety net): malloc(${label}).free()`, safe, 200);
    const unsafe = bestLoop(mallocFree, { device: hostUnsafe, size });
    row(`host, safetyNet: false: malloc(${label}).free()`, unsafe, 150);
  }

  // 2. contents(). In a malloc + contents() + free() cycle the first contents() pays for the external
  // ArrayBuffer, its detaching on free and its collection later: that cycle minus malloc + free is its cost.
  const size = 64 * KiB;
  const cycle = bestLoop(
    "const buffer = context.device.malloc(context.size); buffer.contents(); buffer.free();",
    { device: host, size },
  );
  const bare = bestLoop(mallocFree, { device: host, size });
  row("host: malloc(64 KiB) + first contents() + free()", cycle);
  row("host: first contents() (that cycle − malloc + free)", difference(cycle, bare), 1000);
  // The call alone: 256 fresh buffers, contents() once each (their detaching and collection not counted);
  // then the same batch on the backend's buffers directly: what the addon costs (its external ArrayBuffer),
  // so the difference is the Device's bookkeeping.
  const firstCallOf = (make, release) =>
    bestOf((milliseconds) => {
      const buffers = new Array(256);
      const timed = { wall: 0, cpu: 0 };
      let calls = 0;
      const start = performance.now();
      while (performance.now() - start < milliseconds) {
        for (let index = 0; index < buffers.length; index++) buffers[index] = make();
        const elapsed = stopwatch();
        for (let index = 0; index < buffers.length; index++) buffers[index].contents();
        const { wall, cpu } = elapsed();
        timed.wall += wall;
        timed.cpu += cpu;
        calls += buffers.length;
        for (let index = 0; index < buffers.length; index++) release(buffers[index]);
      }
      return { wall: timed.wall / calls, cpu: timed.cpu / calls };
    }, MILLISECONDS);
  row(
    "host: first contents(), the call alone (batch of 256 buffers)",
    firstCallOf(
      () => host.malloc(size),
      (buffer) => buffer.free(),
    ),
  );
  row(
    "host backend alone: first contents() of its buffer (batch of 256)",
    firstCallOf(
      () => host.native.backend.newBuffer(size),
      (buffer) => buffer.release(),
    ),
  );
  const held = host.malloc(size);
  held.contents();
  row("host: repeated contents() of a live buffer", bestLoop("context.buffer.contents();", { buffer: held }));
  held.free();
}

// 2b. Views in loops that never yield. A view's finalizer runs only after a turn of the event loop, so
// whatever the addon keeps per view until then grows inside such a loop: each row runs 1,000, 10,000 and
// 100,000 iterations in one go (after its loop was compiled and warmed up, and a few turns that let earlier
// rows' finalizers run), and the figure must not grow with the count. Then the malloc + free pair right after
// the longest loop (no turn in between), a model load (views of 10,000 live buffers made in one job, each
// still attached when the next is made), and the same lengths for read(), write(), bytes() and a mapped
// file's view (there mmap + munmap dominate: it shows only that nothing grows). The rows are measured in
// rounds, one measurement of each per round.
const viewLoops = [];
if (host !== undefined) {
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const settle = async () => {
    for (let index = 0; index < 3; index++) await turn();
  };
  const folder = mkdtempSync(join(tmpdir(), "nuvec-device-bench-"));
  const path = join(folder, "view.bin");
  writeFileSync(path, new Uint8Array(64 * KiB).fill(5));
  const context = { device: host, size: 64 * KiB, source: new Uint8Array(64).fill(3), path };
  const counts = [1_000, 10_000, 100_000];
  const none = () => ({ wall: Number.POSITIVE_INFINITY, cpu: Number.POSITIVE_INFINITY });
  const keepBest = (best, { wall, cpu }, count) => {
    best.wall = Math.min(best.wall, wall / count);
    best.cpu = Math.min(best.cpu, cpu / count);
  };
  /** Times one call of `loop(context, count)`: { wall, cpu } for the whole call. */
  const timed = (loop, count) => {
    const elapsed = stopwatch();
    loop(context, count);
    return elapsed();
  };
  const cases = [
    [
      "malloc(64 KiB) + contents() + free()",
      "const b = context.device.malloc(context.size); b.contents(); b.free();",
      1500,
    ],
    [
      "malloc(64 KiB) + bytes() + free()",
      "const b = context.device.malloc(context.size); b.bytes(); b.free();",
      1500,
    ],
    [
      "malloc(64 KiB) + read(0, 64) + free()",
      "const b = context.device.malloc(context.size); b.read(0, 64); b.free();",
      1500,
    ],
    [
      "malloc(64 KiB) + write(64 B) + free()",
      "const b = context.device.malloc(context.size); b.write(context.source); b.free();",
      1500,
    ],
    [
      "mapFile(64 KiB) + contents() + free()",
      "const f = context.device.mapFile(context.path); f.contents(); f.free();",
    ],
  ].map(([what, body, goal]) => ({
    what,
    goal,
    loop: loopOf(body),
    // The pair right after the longest loop: a function of its own per row, compiled and warmed as long as
    // the loop before it, so that what it shows is what the views left behind, not its own warm-up.
    pair: body.includes("malloc") ? loopOf("context.device.malloc(context.size).free();") : undefined,
    figures: counts.map(none),
    after: body.includes("malloc") ? none() : undefined,
    alone: body.includes("malloc") ? none() : undefined,
  }));
  // Compiled and warm, and the heap grown to what such loops need (the first thousands of views pay for
  // young-generation collections that later ones do not).
  for (const row of cases) {
    for (let warmUp = 0; warmUp < 3; warmUp++) {
      row.loop(context, 10_000);
      await settle();
    }
    row.pair?.(context, 100_000);
  }
  // A model load: 10,000 buffers of 4 KiB made and read in one job, freed at the end.
  const load = loopOf(
    "const held = context.held; for (let i = 0; i < context.live; i++) held[i] = context.device.malloc(4096); " +
      "const elapsed = context.stopwatch(); for (let i = 0; i < context.live; i++) held[i].contents(); " +
      "const { wall, cpu } = elapsed(); context.total.wall += wall; context.total.cpu += cpu; " +
      "for (let i = 0; i < context.live; i++) held[i].free();",
  );
  const loadContext = {
    device: host,
    held: new Array(10_000),
    live: 10_000,
    stopwatch,
    total: { wall: 0, cpu: 0 },
  };
  load(loadContext, 1);
  const loadBest = none();
  // The measurements go round the rows, each a few turns after the last: on a virtual machine whole seconds
  // can run slower than the rest (a neighbour's load), and a row measured in one go would be measured in one
  // such stretch. Each figure is the best of its round-robin measurements.
  for (let measurement = 0; measurement < MEASUREMENTS; measurement++) {
    for (const row of cases) {
      for (let index = 0; index < counts.length; index++) {
        await settle();
        keepBest(row.figures[index], timed(row.loop, counts[index]), counts[index]);
      }
      if (row.pair === undefined) continue;
      // After the longest loop with no turn in between; then the same pair with no loop before it: what the
      // views leave behind is the difference (the pair's own cost moves with the state of the engine's code).
      await settle();
      row.loop(context, 100_000);
      keepBest(row.after, timed(row.pair, 100_000), 100_000);
      await settle();
      keepBest(row.alone, timed(row.pair, 100_000), 100_000);
    }
    await settle();
    loadContext.total = { wall: 0, cpu: 0 };
    load(loadContext, 1);
    keepBest(loadBest, loadContext.total, loadContext.live);
  }
  for (const { what, figures, goal, after, alone } of cases)
    viewLoops.push({ what, figures, goal, after, alone });
  viewLoops.push({
    what: "first contents() of 10,000 live 4 KiB buffers in one job (a model load), per call",
    load: loadBest,
  });
  rmSync(folder, { recursive: true, force: true });
  await settle();
}

// The Device's own share of a first contents(): over a backend whose buffers all hand out one ArrayBuffer
// made beforehand (no native call, nothing to detach, no ArrayBuffer to make or collect: on this engine
// making and collecting even an 8-byte ArrayBuffer costs hundreds of nanoseconds, which would drown the
// figure), a malloc + contents() + free() cycle minus malloc + free is what the Device adds: the view held,
// the detaching call, the views forgotten on free. Tying a new view to its owner (a private field installed
// on it, once per view) is not in it: bench/owner-link-bench.mjs measures it (tens of nanoseconds). The
// goal of 1 µs is for the whole first call; the rest is the backend's (the addon's external ArrayBuffer,
// above).
{
  const inner = new MockBackend();
  const shared = new ArrayBuffer(8);
  const freeViews = {
    name: inner.name,
    platform: inner.platform,
    memorySize: inner.memorySize,
    recommendedMaxWorkingSetSize: inner.recommendedMaxWorkingSetSize,
    maxBufferLength: inner.maxBufferLength,
    resourceLimit: inner.resourceLimit,
    pageSize: inner.pageSize,
    supportsResidencySets: inner.supportsResidencySets,
    newBuffer(bytes) {
      const buffer = inner.newBuffer(bytes);
      return {
        length: buffer.length,
        allocatedSize: buffer.allocatedSize,
        quarantined: false,
        get released() {
          return buffer.released;
        },
        contents: () => shared,
        detachContents() {},
        nativeHandle: () => buffer.nativeHandle(),
        release: () => buffer.release(),
      };
    },
    mapFile: (path) => inner.mapFile(path),
    newResidencySet: () => inner.newResidencySet(),
    attachResidencySet: (set, queue) => inner.attachResidencySet(set, queue),
    counters: () => inner.counters(),
  };
  const device = Device.open({ backend: freeViews });
  const size = 256;
  const cycle = bestLoop(
    "const buffer = context.device.malloc(context.size); buffer.contents(); buffer.free();",
    { device, size },
  );
  const bare = bestLoop("context.device.malloc(context.size).free();", { device, size });
  row("the Device's share of a first contents() (over a view that costs nothing)", difference(cycle, bare));
  device.close();
}

// Over the mock, for comparison (after the host rows: see the top).
const mock = Device.open({ backend: new MockBackend() });
const mockUnsafe = Device.open({ backend: new MockBackend(), safetyNet: false });
row(
  "mock, default options: malloc(64 KiB).free()",
  bestLoop("context.device.malloc(context.size).free();", { device: mock, size: 64 * KiB }),
);
row(
  "mock, safetyNet: false: malloc(64 KiB).free()",
  bestLoop("context.device.malloc(context.size).free();", { device: mockUnsafe, size: 64 * KiB }),
);
mock.close();
mockUnsafe.close();
host?.close();
hostUnsafe?.close();

if (viewLoops.length > 0) {
  console.log(
    `\nviews in loops that never yield, host backend, safety net on: ns per iteration (CPU time in parentheses), best of ${MEASUREMENTS}\n`,
  );
  console.log(
    "| path | 1,000 | 10,000 | 100,000 | 100,000 / 1,000 (goal ≤ 1.3×) | malloc + free right after (goal ≤ 200) | the same pair, no loop before |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  const cell = (figure, goal) =>
    `${figure.wall.toFixed(0)} (${figure.cpu.toFixed(0)})${goal === undefined ? "" : figure.cpu <= goal ? " ✓" : " ✗"}`;
  for (const { what, figures, goal, after, alone, load } of viewLoops) {
    if (load !== undefined) {
      console.log(`| ${what} | ${cell(load, 1000)} | | | | | |`);
      continue;
    }
    const ratio = figures[2].cpu / figures[0].cpu;
    console.log(
      `| ${what} | ${figures.map((figure) => cell(figure, goal)).join(" | ")} | ${ratio.toFixed(2)}× ${ratio <= 1.3 ? "✓" : "✗"} | ${after === undefined ? "" : cell(after, 200)} | ${alone === undefined ? "" : cell(alone)} |`,
    );
  }
}

replayRows();
