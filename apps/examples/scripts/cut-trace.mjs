#!/usr/bin/env node
// Makes the demo's own trace: the first EVENTS events of a shared trace (a prefix keeps ids dense and every
// free after its allocation), with a header that describes the cut. Run once by hand:
//   node apps/examples/scripts/cut-trace.mjs fixtures/traces/gpt2-generate.ndjson.gz 24000 apps/examples/traces/gpt2-decode-cut.ndjson.gz
import { traceScriptArguments, writeTrace } from "./trace-files.mjs";

const { header, lines, number: count, output } = traceScriptArguments("cut-trace.mjs SOURCE EVENTS TARGET");
const events = lines.slice(0, count).map((line) => JSON.parse(line));
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
writeTrace(output, cut, events, 9);
