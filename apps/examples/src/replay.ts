// Replays an allocation trace (the shared traces' format, or one recorded with Device.startTrace) on a
// Device over the mock backend, and prints the statistics (a table, or one JSON object with --json).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { readTrace } from "@nuvec/allocator/node";
import { Device, type DeviceBuffer, type MappedFile } from "@nuvec/device";
import { MockBackend } from "@nuvec/metal-native/mock";
import { formatMemoryStats } from "@nuvec/stats";
import { parseArguments, parseBytes, parsePositiveNumber, UsageError } from "./lib/arguments.js";
import { renderReport, type TimelineSample } from "./lib/report.js";

const usage = `usage: replay TRACE [--working-set BYTES] [--memory-size BYTES] [--cache-limit BYTES]
              [--memory-limit BYTES] [--policy mlx|bounded] [--reserve-ratio R]
              [--bounded-release least-recent|largest] [--json] [--html FILE]
  sizes take binary suffixes: 4096, 512MiB, 8GiB (defaults: working set 8GiB, memory size 16GiB)`;

function main(argv: string[]): number {
  const { flags, positionals } = parseArguments(argv, {
    values: [
      "working-set",
      "memory-size",
      "cache-limit",
      "memory-limit",
      "policy",
      "reserve-ratio",
      "bounded-release",
      "html",
    ],
    booleans: ["json", "help"],
  });
  if (flags.has("help")) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? "no TRACE given" : "one TRACE only");
  const workingSet = parseBytes(flags.get("working-set") ?? "8GiB", "--working-set");
  const memorySize = parseBytes(flags.get("memory-size") ?? `${2 * workingSet}`, "--memory-size");
  const policy = flags.get("policy") ?? "mlx";
  if (policy !== "mlx" && policy !== "bounded")
    throw new UsageError(`--policy: "${policy}" is not mlx or bounded`);
  const reserveRatio = flags.has("reserve-ratio")
    ? parsePositiveNumber(flags.get("reserve-ratio") as string, "--reserve-ratio")
    : undefined;
  const boundedRelease = flags.get("bounded-release");
  if (boundedRelease !== undefined && boundedRelease !== "least-recent" && boundedRelease !== "largest") {
    throw new UsageError(`--bounded-release: "${boundedRelease}" is not least-recent or largest`);
  }
  const cacheLimit = flags.has("cache-limit")
    ? parseBytes(flags.get("cache-limit") as string, "--cache-limit")
    : undefined;
  const memoryLimit = flags.has("memory-limit")
    ? parseBytes(flags.get("memory-limit") as string, "--memory-limit")
    : undefined;

  const trace = readTrace(resolve(positionals[0] as string));
  const backend = new MockBackend({
    recommendedMaxWorkingSetSize: workingSet,
    memorySize,
    maxBufferLength: workingSet,
  });
  // As the shared traces' figures: limits set right after opening, memory limit first (it moves the GC limit).
  const device = Device.open({
    backend,
    policy,
    ...(reserveRatio === undefined ? {} : { reserveRatio }),
    ...(boundedRelease === undefined ? {} : { boundedRelease }),
  });
  if (memoryLimit !== undefined) device.setMemoryLimit(memoryLimit);
  if (cacheLimit !== undefined) device.setCacheLimit(cacheLimit);

  const buffers = new Map<number, DeviceBuffer>();
  const mappings = new Map<number, MappedFile>();
  const samples: TimelineSample[] = [];
  const htmlPath = flags.get("html");
  const sampleEvery = Math.max(1, Math.floor(trace.events.length / 2000));
  let refused = 0;
  const started = process.hrtime.bigint();
  let index = 0;
  for (const event of trace.events) {
    switch (event[0]) {
      case "a":
        try {
          buffers.set(event[1], device.malloc(event[2]));
        } catch (error) {
          if ((error as { code?: string }).code !== "ERR_NUVEC_OUT_OF_MEMORY") throw error;
          refused += 1;
        }
        break;
      case "f":
        buffers.get(event[1])?.free();
        buffers.delete(event[1]);
        break;
      case "m": {
        const path = `trace-mapping-${event[1]}`;
        backend.addFile(path, event[2]);
        mappings.set(event[1], device.mapFile(path));
        break;
      }
      case "u":
        mappings.get(event[1])?.release();
        mappings.delete(event[1]);
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
    index += 1;
    if (htmlPath !== undefined && index % sampleEvery === 0) {
      const stats = device.memoryStats();
      samples.push({
        x: index,
        active: stats.active,
        cache: stats.cache,
        wired: stats.wired,
        mapped: stats.mapped,
      });
    }
  }
  const nanoseconds = Number(process.hrtime.bigint() - started);
  const stats = device.memoryStats();
  const counters = device.counters();
  const result = {
    trace: trace.header?.name ?? positionals[0],
    policy,
    ...stats,
    events: trace.events.length,
    cacheHits: counters.cacheHits,
    systemAllocations: stats.systemAllocations,
    peakReserved: counters.peakReserved,
    peakLive: counters.peakLive,
    outOfMemoryRefusals: refused,
    nsPerEvent: Math.round((nanoseconds / Math.max(1, trace.events.length)) * 10) / 10,
  };
  if (flags.has("json")) {
    console.log(JSON.stringify(result));
  } else {
    console.log(
      formatMemoryStats(stats, { title: `${result.trace}: ${result.events} events, policy ${policy}` }),
    );
    console.log(
      `cache hits ${result.cacheHits}, system allocations ${result.systemAllocations}, peak reserved ${result.peakReserved}, refused ${refused}, ${result.nsPerEvent} ns/event (device over the mock backend)`,
    );
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
    if (!flags.has("json")) console.log(`report: ${path}`);
  }
  for (const buffer of buffers.values()) buffer.free();
  for (const mapping of mappings.values()) mapping.release();
  device.close();
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  const code = (error as { code?: string }).code;
  console.error(`replay: ${(error as Error).message}${code ? ` (${code})` : ""}`);
  if (error instanceof UsageError) console.error(usage);
  process.exitCode = 2;
}
