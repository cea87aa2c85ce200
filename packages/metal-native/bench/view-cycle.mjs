#!/usr/bin/env node
// The cost of a view on one addon file: a Device over that addon, malloc(64 KiB) + the first contents() +
// free(), in a loop that never yields (the freed buffer comes back from the cache, so the view is most of
// it). Prints one JSON line: the addon's view mechanism and the best mean of several rounds, in nanoseconds.
//
//   node bench/view-cycle.mjs <file.node> [--rounds N] [--cycles N]
//
// test/prebuilds.test.ts runs it on the prebuilt binary and on the source build, alternating, to compare
// them on the same machine. Needs the workspace built (this package's and @nuvec/device's dist).
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(name);
  return index >= 0 ? Number(args[index + 1]) : fallback;
};
const file = args[0] === undefined ? undefined : resolve(args[0]);
if (file === undefined || file.startsWith("--")) {
  console.error("usage: node bench/view-cycle.mjs <file.node> [--rounds N] [--cycles N]");
  process.exit(2);
}
const rounds = option("--rounds", 7);
const cycles = option("--cycles", 200_000);

const { NativeAddonBackend } = await import(join(root, "dist", "index.js"));
const { Device } = await import(join(root, "..", "device", "dist", "index.js"));
const addon = createRequire(import.meta.url)(file);
const device = Device.open({ backend: new NativeAddonBackend(addon) });
const size = 64 * 1024;
const cycle = () => {
  for (let index = 0; index < cycles; index++) {
    const buffer = device.malloc(size);
    buffer.contents();
    buffer.free();
  }
};
cycle(); // warm-up: the cache, the optimizing compiler
const means = [];
for (let round = 0; round < rounds; round++) {
  const start = process.hrtime.bigint();
  cycle();
  means.push(Number(process.hrtime.bigint() - start) / cycles);
}
device.close();
console.log(
  JSON.stringify({
    file,
    viewMechanism: addon.viewMechanism,
    node: process.version,
    bestNs: Math.min(...means),
    medianNs: [...means].sort((a, b) => a - b)[Math.floor(means.length / 2)],
  }),
);
