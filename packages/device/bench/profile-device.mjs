#!/usr/bin/env node
// A profiling driver for the Device's hot paths (see ../../allocator/bench/PROFILE.md): runs one path for a
// few seconds and prints how many operations it ran (give it to the allocator's bench/cpuprofile-top.mjs).
//   node --cpu-prof --cpu-prof-interval 50 --cpu-prof-name safe.cpuprofile bench/profile-device.mjs safe
//   node ../allocator/bench/cpuprofile-top.mjs safe.cpuprofile --operations N --lines
// Paths: safe | unsafe (host malloc(64 KiB).free() with / without the safety net), contents (host malloc +
// first contents() + free), repeat (repeated contents()), program / program-unsafe (the replay program over
// the mock on gpt2-generate).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readTrace } from "@nuvec/allocator/node";
import { MockBackend } from "@nuvec/metal-native/mock";
import { Device } from "../dist/index.js";

const which = process.argv[2] ?? "safe";
const size = 64 * 1024;
const GiB = 1024 ** 3;
let operations = 0;
const start = performance.now();
const running = () => performance.now() - start < 6000;
if (which === "safe" || which === "unsafe") {
  const device = Device.open(which === "unsafe" ? { safetyNet: false } : {});
  while (running()) {
    for (let index = 0; index < 10_000; index++) device.malloc(size).free();
    operations += 10_000;
  }
  device.close();
} else if (which === "contents") {
  const device = Device.open();
  while (running()) {
    for (let index = 0; index < 1000; index++) {
      const buffer = device.malloc(size);
      buffer.contents();
      buffer.free();
    }
    operations += 1000;
  }
  device.close();
} else if (which === "repeat") {
  const device = Device.open();
  const buffer = device.malloc(size);
  while (running()) {
    for (let index = 0; index < 10_000; index++) buffer.contents();
    operations += 10_000;
  }
  device.close();
} else if (which === "program" || which === "program-unsafe") {
  const tracesDir = resolve(dirname(fileURLToPath(import.meta.url)), "../../../fixtures/traces");
  const { events } = readTrace(resolve(tracesDir, "gpt2-generate.ndjson.gz"));
  const options = which === "program-unsafe" ? { safetyNet: false } : {};
  while (running()) {
    const backend = new MockBackend({
      recommendedMaxWorkingSetSize: 8 * GiB,
      memorySize: 16 * GiB,
      maxBufferLength: 8 * GiB,
      callLogLimit: 0,
    });
    const device = Device.open({ backend, policy: "mlx", ...options });
    const buffers = [];
    for (const event of events) {
      if (event[0] === "a") buffers[event[1]] = device.malloc(event[2]);
      else {
        buffers[event[1]]?.free();
        buffers[event[1]] = undefined;
      }
    }
    device.close();
    operations += events.length;
  }
} else {
  console.error("usage: profile-device.mjs safe|unsafe|contents|repeat|program|program-unsafe");
  process.exit(2);
}
console.log(
  `operations: ${operations} (${(((performance.now() - start) * 1e6) / operations).toFixed(0)} ns each)`,
);
