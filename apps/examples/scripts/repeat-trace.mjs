#!/usr/bin/env node
// Makes a long trace from a recorded one: its events TIMES over, each copy's ids moved past the previous
// copy's, and what a copy leaves live freed before the next begins (a server answering the same request
// again and again). For measuring the memory view and the replay on real lengths:
//   node apps/examples/scripts/repeat-trace.mjs fixtures/traces/gpt2-generate.ndjson.gz 4 /tmp/gpt2-x4.ndjson.gz
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { prepareOutputPath } from "../../../scripts/output-path.mjs";

const [source, times, target] = process.argv.slice(2);
if (!source || !times || !target || !(Number(times) >= 1)) {
  console.error("usage: repeat-trace.mjs SOURCE TIMES TARGET");
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
const events = lines.slice(1).map((line) => JSON.parse(line));
let span = 0;
for (const event of events) if (event[0] === "a") span = Math.max(span, event[1] + 1);
const out = [];
for (let copy = 0; copy < Number(times); copy += 1) {
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
  if (copy + 1 < Number(times)) for (const id of live) out.push(["f", id + offset]);
}
const allocations = out.filter((event) => event[0] === "a").length;
const repeated = {
  name: `${header.name}-x${times}`,
  workload: `${header.workload}, ${times} times over (what each time leaves live freed before the next)`,
  source: header.source,
  events: out.length,
  allocations,
};
const text = [repeated, ...out].map((line) => JSON.stringify(line)).join("\n");
writeFileSync(output, gzipSync(`${text}\n`, { level: 6 }));
console.log(JSON.stringify(repeated));
