#!/usr/bin/env node
// A cache miss layer by layer: `malloc(64 KiB)` + `free()` with a cache limit of 0 (every malloc a new system
// buffer, every free a release), through the allocator alone over buffers that cost nothing, the mock
// backend alone, the allocator over the mock, the allocator over the mock with residency tracking each
// buffer (as a Device's hooks do), and the Device over the mock; the Device's cached pair beside them. What
// a layer adds is its row less the one before. Each row runs in a process of its own, so that no row makes
// another's calls polymorphic. Run after the build:
//   node bench/miss-bench.mjs [--milliseconds N] [--measurements N]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { CachingAllocator } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { Residency } from "@nuvec/residency";
import { Device } from "../dist/index.js";
import { bestLoop, GiB, KiB, MEASUREMENTS, MILLISECONDS, row } from "./device-bench-measure.mjs";

const SIZE = 64 * KiB;
const limits = { recommendedMaxWorkingSetSize: 8 * GiB, memorySize: 16 * GiB, maxBufferLength: 8 * GiB };
const mock = () => new MockBackend({ ...limits, callLogLimit: 0 });
const allocatorOver = (acquire, release, hooks = {}) =>
  new CachingAllocator(
    { ...limits, resourceLimit: 499000, pageSize: 16384, acquire, release },
    { policy: "mlx", cacheLimit: 0, ...hooks },
  );
const pair = "context.target.free(context.target.malloc(context.size));";

/** Each row: what it measures and how to make its loop's body and context. */
const ROWS = {
  "allocator alone (buffers that cost nothing)": () => ({
    body: pair,
    context: {
      target: allocatorOver(
        (bytes) => ({ bytes }),
        () => {},
      ),
    },
  }),
  "mock alone: newBuffer().release()": () => ({
    body: "context.backend.newBuffer(context.size).release();",
    context: { backend: mock() },
  }),
  "allocator over the mock": () => {
    const backend = mock();
    return {
      body: pair,
      context: {
        target: allocatorOver(
          (bytes) => backend.newBuffer(bytes),
          (buffer) => buffer.release(),
        ),
      },
    };
  },
  "allocator over the mock, residency tracking each buffer": () => {
    const backend = mock();
    const residency = new Residency(
      {
        supportsResidencySets: backend.supportsResidencySets,
        newResidencySet: () => backend.newResidencySet(),
        attachResidencySet: (set) => backend.attachResidencySet(set),
        allocatedSize: (buffer) => buffer.allocatedSize,
      },
      { workingSet: limits.recommendedMaxWorkingSetSize },
    );
    const target = allocatorOver(
      (bytes) => backend.newBuffer(bytes),
      (buffer) => buffer.release(),
      {
        onAcquire: (buffer) => residency.insert(buffer, false),
        onRelease: (buffer) => residency.erase(buffer),
      },
    );
    return { body: pair, context: { target } };
  },
  "Device over the mock: malloc().free()": () => ({
    body: "context.device.malloc(context.size).free();",
    context: { device: Device.open({ backend: mock(), policy: "mlx", cacheLimit: 0 }) },
  }),
  "Device over the mock, cached (for comparison)": () => ({
    body: "context.device.malloc(context.size).free();",
    context: { device: Device.open({ backend: mock(), policy: "mlx" }) },
  }),
};

const rowFlag = process.argv.indexOf("--row");
if (rowFlag > 0) {
  const name = process.argv[rowFlag + 1];
  const { body, context } = ROWS[name]();
  row(name, bestLoop(body, { ...context, size: SIZE }));
} else {
  console.log(
    `node ${process.version}; a miss per malloc (cache limit 0), 64 KiB, ns per malloc + free; best of ${MEASUREMENTS} measurements of ≥ ${MILLISECONDS} ms, each row in its own process\n`,
  );
  console.log("| path | ns | ns, CPU time | goal (ns) |");
  console.log("| --- | --- | --- | --- |");
  const self = fileURLToPath(import.meta.url);
  const flags = ["--milliseconds", String(MILLISECONDS), "--measurements", String(MEASUREMENTS)];
  for (const name of Object.keys(ROWS)) {
    const child = spawnSync(process.execPath, [self, "--row", name, ...flags], { encoding: "utf8" });
    if (child.status !== 0) throw new Error(`row "${name}" failed: ${child.stderr}`);
    process.stdout.write(child.stdout);
  }
}
