#!/usr/bin/env node
// Makes a long trace from a recorded one: its events TIMES over, each copy's ids moved past the previous
// copy's, and what a copy leaves live freed before the next begins (a server answering the same request
// again and again). For measuring the memory view and the replay on real lengths:
//   node apps/examples/scripts/repeat-trace.mjs fixtures/traces/gpt2-generate.ndjson.gz 4 /tmp/gpt2-x4.ndjson.gz
import { traceScriptArguments, writeTrace } from "./trace-files.mjs";

const { header, lines, number: times, output } = traceScriptArguments("repeat-trace.mjs SOURCE TIMES TARGET");
const events = lines.map((line) => JSON.parse(line));
let span = 0;
for (const event of events) if (event[0] === "a") span = Math.max(span, event[1] + 1);
const out = [];
for (let copy = 0; copy < times; copy += 1) {
  const live = new Set();
  const offset = copy * span;
  for (const event of events) {
    if (event[0] === "a") {
      live.add(event[1]);
      out.push(["a", event[1] + offset, event[2]]);
    } else if (event[0] === "f") {
      live.delete(event[1]);
      out.push(["f", event[1] + offset]);
    } else out.push(event);
  }
  if (copy + 1 < times) for (const id of live) out.push(["f", id + offset]);
}
const allocations = out.filter((event) => event[0] === "a").length;
const repeated = {
  name: `${header.name}-x${times}`,
  workload: `${header.workload}, ${times} times over (what each time leaves live freed before the next)`,
  source: header.source,
  events: out.length,
  allocations,
};
writeTrace(output, repeated, out, 6);
