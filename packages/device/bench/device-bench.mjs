#!/usr/bin/env node
// The Device's hot path: malloc + free of a cached size (the common case of a runtime), over the mock and
// over the real host backend, next to the allocator alone; and contents() (an external ArrayBuffer).
// Run: pnpm --filter @nuvec/device bench
import { CachingAllocator } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { Bench } from "tinybench";
import { Device } from "../dist/index.js";

const bench = new Bench({ time: 500, warmupTime: 100 });
const sizes = [256, 64 * 1024, 16 * 1024 * 1024];

const allocator = new CachingAllocator({
  recommendedMaxWorkingSetSize: 8 * 1024 ** 3,
  memorySize: 16 * 1024 ** 3,
  maxBufferLength: 8 * 1024 ** 3,
  resourceLimit: 499000,
  pageSize: 16384,
  acquire: (bytes) => ({ bytes }),
  release: () => {},
});
for (const size of sizes) {
  bench.add(`allocator alone: malloc+free ${size} B (cached)`, () => allocator.free(allocator.malloc(size)));
}

const mock = Device.open({ backend: new MockBackend() });
for (const size of sizes) {
  bench.add(`device over mock: malloc+free ${size} B (cached)`, () => mock.malloc(size).free());
}

let host;
try {
  host = Device.open();
  for (const size of sizes) {
    bench.add(`device over host: malloc+free ${size} B (cached)`, () => host.malloc(size).free());
  }
  bench.add("device over host: malloc+contents()+free 64 KiB", () => {
    const buffer = host.malloc(64 * 1024);
    buffer.contents();
    buffer.free();
  });
} catch (error) {
  console.log(`host backend unavailable: ${error.message}`);
}

await bench.run();
console.table(
  bench.tasks.map((task) => ({
    task: task.name,
    "ns/op (median)": Math.round((task.result?.latency?.p50 ?? Number.NaN) * 1e6),
    "ops/s": Math.round(task.result?.throughput?.mean ?? 0),
  })),
);
mock.close();
host?.close();
