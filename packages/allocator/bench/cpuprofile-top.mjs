#!/usr/bin/env node
// Summarises a V8 CPU profile (`node --cpu-prof`): the functions with the most self time and with the most
// total time (self + callees), as a share of the profile and, given the number of operations the profiled
// program ran, as nanoseconds per operation.
// With --lines, also the source lines with the most self time (V8 attributes a function inlined by the
// optimiser to its caller, so the line is where the time really is): `positionTicks` of the profile. A
// line of a function inlined from another file is reported under its caller's file (V8 gives the inlined
// function's line numbers with the caller's script): read such a line in the other file.
//   node bench/cpuprofile-top.mjs PROFILE.cpuprofile [--operations N] [--top 20] [--lines]
import { existsSync, readFileSync } from "node:fs";
import { basename, sep } from "node:path";
import { fileURLToPath } from "node:url";

const [path] = process.argv.slice(2);
if (path === undefined) {
  console.error("usage: cpuprofile-top.mjs PROFILE.cpuprofile [--operations N] [--top N]");
  process.exit(2);
}
const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const operations = option("--operations", 0);
const top = option("--top", 20);

const profile = JSON.parse(readFileSync(path, "utf8"));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

// The last three parts of a path: enough to tell packages/device/dist/index.js from metal-native's.
const shortPath = (url) => {
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  return path.split(sep).slice(-3).join("/");
};

const nameOf = (node) => {
  const frame = node.callFrame;
  const where = frame.url ? `${shortPath(frame.url)}:${frame.lineNumber + 1}` : "";
  return `${frame.functionName || "(anonymous)"}${where ? ` ${where}` : ""}`;
};

// Microseconds per sample: timeDeltas[i] is the time before sample i.
const selfTime = new Map();
const totalTime = new Map();
let profiled = 0;
for (let index = 0; index < profile.samples.length; index++) {
  const delta = profile.timeDeltas[index + 1] ?? 0;
  profiled += delta;
  let node = nodes.get(profile.samples[index]);
  const name = nameOf(node);
  selfTime.set(name, (selfTime.get(name) ?? 0) + delta);
  const seen = new Set();
  while (node !== undefined) {
    const frameName = nameOf(node);
    if (!seen.has(frameName)) {
      seen.add(frameName);
      totalTime.set(frameName, (totalTime.get(frameName) ?? 0) + delta);
    }
    node = nodes.get(parent.get(node.id));
  }
}

const print = (title, table) => {
  console.log(`\n${title}\n`);
  console.log(`| function | share | ${operations > 0 ? "ns per operation |" : ""}`);
  console.log(`| --- | --- | ${operations > 0 ? "--- |" : ""}`);
  for (const [name, microseconds] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const share = `${((100 * microseconds) / profiled).toFixed(1)}%`;
    const ns = operations > 0 ? ` ${((microseconds * 1000) / operations).toFixed(1)} |` : "";
    console.log(`| \`${name}\` | ${share} |${ns}`);
  }
};
console.log(
  `${basename(path)}: ${(profiled / 1e6).toFixed(2)} s profiled${operations > 0 ? `, ${operations} operations` : ""}`,
);
print("self time", selfTime);
print("total time (self + callees)", totalTime);

if (process.argv.includes("--lines")) {
  const microsecondsPerTick = profiled / profile.samples.length;
  const lineTime = new Map();
  for (const node of profile.nodes) {
    const url = node.callFrame.url;
    if (!url.startsWith("file://")) continue;
    for (const { line, ticks } of node.positionTicks ?? []) {
      const key = `${url}:${line}`;
      lineTime.set(key, (lineTime.get(key) ?? 0) + ticks * microsecondsPerTick);
    }
  }
  const sources = new Map();
  const sourceLine = (url, line) => {
    if (!sources.has(url)) {
      const file = fileURLToPath(url);
      sources.set(url, existsSync(file) ? readFileSync(file, "utf8").split("\n") : []);
    }
    return (sources.get(url)[line - 1] ?? "").trim().slice(0, 90).replaceAll("|", "\\|");
  };
  print(
    "source lines, self time",
    new Map(
      [...lineTime].map(([key, microseconds]) => {
        const at = key.lastIndexOf(":");
        const url = key.slice(0, at);
        const line = Number(key.slice(at + 1));
        return [`${shortPath(url)}:${line} ${sourceLine(url, line)}`, microseconds];
      }),
    ),
  );
}
