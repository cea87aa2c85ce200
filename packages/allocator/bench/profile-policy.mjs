#!/usr/bin/env node
// A profiling driver for the policy's hot path: replays one trace through `replayTrace`
// for six seconds after a warm-up, and prints the number of events replayed (give it to cpuprofile-top.mjs).
//   node --cpu-prof --cpu-prof-interval 50 --cpu-prof-name policy.cpuprofile bench/profile-policy.mjs decode
//   node bench/cpuprofile-top.mjs policy.cpuprofile --operations N --lines
// The trace: "decode" (the generated one) or the name of a shared trace (e.g. gpt2-generate).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { replayTrace } from "../dist/index.js";
import { readTrace } from "../dist/node.js";
import { decodeTrace } from "./decode-trace.mjs";

const tracesDir = resolve(dirname(fileURLToPath(import.meta.url)), "../../../fixtures/traces");
const which = process.argv[2] ?? "decode";
const events =
  which === "decode" ? decodeTrace() : readTrace(resolve(tracesDir, `${which}.ndjson.gz`)).events;
const options = { workingSet: 8 * 1024 ** 3, memorySize: 16 * 1024 ** 3, policy: "mlx" };
let replayed = 0;
for (let run = 0; run < 5; run++) {
  replayTrace(events, options);
  replayed += events.length;
}
const start = performance.now();
while (performance.now() - start < Number(process.env.PROFILE_MS ?? 6000)) {
  replayTrace(events, options);
  replayed += events.length;
}
console.log(`operations (events, warm-up included): ${replayed}`);
