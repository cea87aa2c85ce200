#!/usr/bin/env node
// Makes the demo's own trace: the first EVENTS events of a shared trace (a prefix keeps ids dense and every
// free after its allocation), with a header that describes the cut. Run once by hand:
//   node apps/examples/scripts/cut-trace.mjs fixtures/traces/gpt2-generate.ndjson.gz 24000 apps/examples/traces/gpt2-decode-cut.ndjson.gz
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { prepareOutputPath } from "../../../scripts/output-path.mjs";

const [source, count, target] = process.argv.slice(2);
if (!source || !count || !target) {
  console.error("usage: cut-trace.mjs SOURCE EVENTS TARGET");
  process.exit(2);
}
// Checked before the work: a path that cannot be written fails at once, never after reading the source.
let output;
try {
  output = prepareOutputPath(target, "TARGET");
} catch (error) {
  console.error(`${error.message} (${error.code})`);
  process.exit(2);
}
const lines = gunzipSync(readFileSync(source)).toString("utf8").trim().split("\n");
const header = JSON.parse(lines[0]);
const events = lines.slice(1, 1 + Number(count)).map((line) => JSON.parse(line));
const live = new Map();
let liveBytes = 0;
let peak = 0;
let allocations = 0;
for (const event of events) {
  if (event[0] === "a") {
    allocations += 1;
    live.set(event[1], event[2]);
    liveBytes += event[2];
    peak = Math.max(peak, liveBytes);
  } else {
    liveBytes -= live.get(event[1]);
    live.delete(event[1]);
  }
}
const cut = {
  name: `${header.name}-cut`,
  workload: `the first ${events.length} events of ${header.name}: ${header.workload}`,
  source: header.source,
  events: events.length,
  allocations,
  live_at_end: live.size,
  peak_live_bytes: peak,
};
const text = [cut, ...events].map((line) => JSON.stringify(line)).join("\n");
writeFileSync(output, gzipSync(`${text}\n`, { level: 9 }));
console.log(JSON.stringify(cut));
