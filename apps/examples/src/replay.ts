// Replays an allocation trace (the shared traces' format, or one recorded with Device.startTrace) on a
// Device over the mock backend, and prints the statistics (a table, or one JSON object with --json). The
// trace is read as a stream (memory bounded by what it keeps live, not by its length) and every event goes
// through the allocator's TraceValidator, the same check replayTrace makes.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { TraceValidator } from "@nuvec/allocator";
import { streamTraceBatches } from "@nuvec/allocator/node";
import { Device, type DeviceBuffer, type MappedFile } from "@nuvec/device";
import { MockBackend } from "@nuvec/metal-native/mock";
import { formatBytes } from "@nuvec/stats";
import {
  type FlagSpec,
  helpText,
  parseBytes,
  parseCommandLine,
  parsePositiveNumber,
  runProgram,
  UsageError,
} from "./lib/arguments.js";
import { columnsOf, progress } from "./lib/progress.js";
import { renderReport, type TimelineSample } from "./lib/report.js";
import { statsTable } from "./lib/tables.js";

const flags: FlagSpec[] = [
  { name: "working-set", value: "BYTES", help: "the mock device's working set", defaultText: "8GiB" },
  { name: "memory-size", value: "BYTES", help: "the mock device's memory", defaultText: "2 × working set" },
  { name: "cache-limit", value: "BYTES", help: "set after opening", defaultText: "the device's" },
  { name: "memory-limit", value: "BYTES", help: "set after opening", defaultText: "the device's" },
  { name: "policy", value: "bounded|mlx", help: "the cache policy", defaultText: "bounded" },
  { name: "reserve-ratio", value: "R", help: "the bounded policy's ratio", defaultText: "1.3" },
  {
    name: "bounded-release",
    value: "WHICH",
    help: "least-recent or largest: what the bounded policy releases first",
    defaultText: "least-recent",
  },
  { name: "json", help: "print one JSON object instead of the table", defaultText: "off" },
  { name: "html", value: "FILE", help: "also write an HTML report with a timeline", defaultText: "none" },
  { name: "help", short: "h", help: "show this help" },
];
const usage = helpText(
  "replay TRACE [flags]",
  "Replays a trace (NDJSON, gzipped or not: the shared traces, or one recorded by device.startTrace()) on a Device over the mock backend and prints its memory statistics. Sizes take binary suffixes: 4096, 512MiB, 8GiB. Shows progress on a terminal (not with --json or when piped).",
  flags,
);

/**
 * Takes the buffer or mapped file of trace id `id` out of `handles`: `undefined` when there is none (the
 * allocation was refused past the memory limit), else its one owner, to free or release.
 */
function take<T>(handles: (T | undefined)[], id: number): T | undefined {
  const handle = handles[id];
  handles[id] = undefined;
  return handle;
}

async function main(argv: string[]): Promise<number> {
  const { flags: given, positionals } = parseCommandLine(argv, flags);
  if (given.has("help")) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? "no TRACE given" : "one TRACE only");
  const workingSet = parseBytes(given.get("working-set") ?? "8GiB", "--working-set");
  const memorySize = parseBytes(given.get("memory-size") ?? `${2 * workingSet}`, "--memory-size");
  const policy = given.get("policy") ?? "bounded";
  if (policy !== "mlx" && policy !== "bounded")
    throw new UsageError(`--policy: "${policy}" is not mlx or bounded`);
  const reserveRatio = given.has("reserve-ratio")
    ? parsePositiveNumber(given.get("reserve-ratio") as string, "--reserve-ratio")
    : undefined;
  const boundedRelease = given.get("bounded-release");
  if (boundedRelease !== undefined && boundedRelease !== "least-recent" && boundedRelease !== "largest") {
    throw new UsageError(`--bounded-release: "${boundedRelease}" is not least-recent or largest`);
  }
  const cacheLimit = given.has("cache-limit")
    ? parseBytes(given.get("cache-limit") as string, "--cache-limit")
    : undefined;
  const memoryLimit = given.has("memory-limit")
    ? parseBytes(given.get("memory-limit") as string, "--memory-limit")
    : undefined;
  const json = given.has("json");
  const htmlPath = given.get("html");
  const tracePath = resolve(positionals[0] as string);

  const backend = new MockBackend({
    recommendedMaxWorkingSetSize: workingSet,
    memorySize,
    maxBufferLength: workingSet,
    // The program reads figures, never the mock's call log: the log then keeps its counters only.
    callLogLimit: 0,
  });
  // As the shared traces' figures: limits set right after opening, memory limit first (it moves the GC limit).
  const device = Device.open({
    backend,
    policy,
    ...(reserveRatio === undefined ? {} : { reserveRatio }),
    ...(boundedRelease === undefined ? {} : { boundedRelease }),
  });
  // By trace id: every trace writer makes dense ids from 0, so an array indexed by id is a Map without the
  // hashing (a sparse id still works: the array then turns into a dictionary).
  const buffers: (DeviceBuffer | undefined)[] = [];
  const mappings: (MappedFile | undefined)[] = [];
  try {
    if (memoryLimit !== undefined) device.setMemoryLimit(memoryLimit);
    if (cacheLimit !== undefined) device.setCacheLimit(cacheLimit);

    const validator = new TraceValidator();
    const samples: TimelineSample[] = [];
    // Progress only on a terminal and only for --json-less runs; a short trace finishes before it shows.
    const bar = progress(`replaying ${positionals[0]}`, process.stdout, { quiet: json, ttyOnly: true });
    let fraction = 0;
    let sampledAt = -1;
    let refused = 0;
    let replayNanoseconds = 0n;
    const onProgress = (bytesRead: number, totalBytes: number | undefined) => {
      fraction = totalBytes ? bytesRead / totalBytes : 0;
      bar.update(fraction);
    };
    for await (const batch of streamTraceBatches(tracePath, { onProgress })) {
      const started = process.hrtime.bigint();
      for (const item of batch) {
        const event = validator.check(item);
        if (event === undefined) continue; // the header
        switch (event[0]) {
          case "a":
            try {
              buffers[event[1]] = device.malloc(event[2]);
            } catch (error) {
              if ((error as { code?: string }).code !== "ERR_NUVEC_OUT_OF_MEMORY") throw error;
              refused += 1;
            }
            break;
          case "f":
            take(buffers, event[1])?.free();
            break;
          case "m": {
            const path = `trace-mapping-${event[1]}`;
            backend.addFile(path, event[2]);
            mappings[event[1]] = device.mapFile(path);
            break;
          }
          case "u":
            take(mappings, event[1])?.free();
            break;
          case "l":
            if (event[1] === "memory") device.setMemoryLimit(event[2]);
            else if (event[1] === "cache") device.setCacheLimit(event[2]);
            else device.setWiredLimit(Math.min(event[2], workingSet));
            break;
          case "c":
            device.clearCache();
            break;
          case "p":
            device.resetPeak();
            break;
        }
        // About 2000 samples over the file, whatever its length (it is read once, as a stream).
        const step = Math.floor(fraction * 2000);
        if (htmlPath !== undefined && step !== sampledAt) {
          sampledAt = step;
          const stats = device.memoryStats();
          const { active, cache, wired, mapped } = stats;
          samples.push({ x: validator.events, active, cache, wired, mapped });
        }
      }
      replayNanoseconds += process.hrtime.bigint() - started;
    }
    const events = validator.events;
    const stats = device.memoryStats();
    const counters = device.counters();
    const traceName = validator.header?.name ?? positionals[0];
    bar.done(`${events} events`);
    const result = {
      trace: traceName,
      policy,
      ...stats,
      events,
      cacheHits: counters.cacheHits,
      systemAllocations: stats.systemAllocations,
      peakLive: counters.peakLive,
      outOfMemoryRefusals: refused,
      nsPerEvent: Math.round((Number(replayNanoseconds) / Math.max(1, events)) * 10) / 10,
    };
    if (json) {
      console.log(JSON.stringify(result));
    } else {
      const columns = Math.min(80, columnsOf(process.stdout));
      console.log(statsTable(stats, `${result.trace}: ${events} events, policy ${policy}`, columns));
      console.log(`cache hits ${result.cacheHits}, system allocations ${result.systemAllocations},`);
      console.log(`peak reserved ${formatBytes(result.peakReserved)}, refused ${refused},`);
      console.log(`${result.nsPerEvent} ns/event (a Device over the mock backend)`);
    }
    if (htmlPath !== undefined) {
      const path = resolve(htmlPath);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(
        path,
        renderReport({
          title: `replay of ${result.trace}`,
          subtitle: `policy ${policy}, working set ${workingSet} B, memory size ${memorySize} B`,
          xLabel: "event",
          samples,
          tables: [{ title: "at the end", stats }],
        }),
      );
      if (!json) console.log(`report: ${path}`);
    }
  } finally {
    for (const buffer of buffers) buffer?.free();
    for (const mapping of mappings) mapping?.free();
    device.close();
  }
  return 0;
}

await runProgram("replay", () => main(process.argv.slice(2)));
