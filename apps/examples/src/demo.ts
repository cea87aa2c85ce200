// The main job: open the real device, map a safetensors checkpoint without a copy, wire it, replay a
// decode workload, and show where memory went at each phase, next to the operating system's own figures.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readTrace } from "@nuvec/allocator/node";
import { Device, type DeviceBuffer, type MappedFile } from "@nuvec/device";
import { formatBytes, formatMemoryStats, type MemoryStats } from "@nuvec/stats";
import { parseArguments, parseBytes, UsageError } from "./lib/arguments.js";
import { processMemory, resetProcessPeak } from "./lib/process-memory.js";
import { progress } from "./lib/progress.js";
import { renderReport, type TimelinePhase, type TimelineSample } from "./lib/report.js";
import { decoderModel, parseSafetensors, writeSafetensors } from "./lib/safetensors.js";

const here = dirname(fileURLToPath(import.meta.url));
const usage = `usage: demo [--checkpoint PATH] [--checkpoint-size BYTES] [--trace PATH] [--report FILE]
  --checkpoint PATH       map this safetensors file instead of writing a random one
  --checkpoint-size SIZE  size of the generated checkpoint (default 256MiB)
  --trace PATH            the workload to replay (default: the shipped GPT-2 decode cut)
  --report FILE           where to write the HTML report (default apps/examples/out/demo-report.html)`;

function main(argv: string[]): number {
  const { flags } = parseArguments(argv, {
    values: ["checkpoint", "checkpoint-size", "trace", "report"],
    booleans: ["help"],
  });
  if (flags.has("help")) {
    console.log(usage);
    return 0;
  }
  const checkpointSize = parseBytes(flags.get("checkpoint-size") ?? "256MiB", "--checkpoint-size");
  const tracePath = resolve(flags.get("trace") ?? join(here, "..", "traces", "gpt2-decode-cut.ndjson.gz"));
  const reportPath = resolve(flags.get("report") ?? join(here, "..", "out", "demo-report.html"));

  const samples: TimelineSample[] = [];
  const phases: TimelinePhase[] = [];
  const tables: { title: string; stats: MemoryStats }[] = [];
  const started = performance.now();

  const device = Device.open();
  const sample = () => {
    const stats = device.memoryStats();
    samples.push({
      x: performance.now() - started,
      active: stats.active,
      cache: stats.cache,
      wired: stats.wired,
      mapped: stats.mapped,
    });
  };
  const phase = (name: string) => {
    phases.push({ name, x: performance.now() - started });
    sample();
  };
  const show = (title: string) => {
    const stats = device.memoryStats();
    tables.push({ title, stats });
    console.log(`\n${formatMemoryStats(stats, { title })}\n`);
  };

  const info = device.info();
  console.log(`nuvec demo on ${info.name} (${info.platform} backend)`);
  console.log(
    `  memory ${formatBytes(info.memorySize)}, working set ${formatBytes(info.recommendedMaxWorkingSetSize)}, page ${formatBytes(info.pageSize)}, residency sets ${info.residencySupported ? "supported" : "not supported"}`,
  );
  phase("open");

  // 1. A checkpoint: the user's, or a random one written to a temporary folder.
  let temporary: string | undefined;
  let checkpointPath = flags.get("checkpoint");
  if (checkpointPath === undefined) {
    temporary = mkdtempSync(join(tmpdir(), "nuvec-demo-"));
    checkpointPath = join(temporary, "model.safetensors");
    phase("writing");
    const writing = progress(
      `writing a checkpoint of about ${formatBytes(checkpointSize)} of random fp16 weights`,
    );
    const length = writeSafetensors(checkpointPath, decoderModel(checkpointSize), (fraction) =>
      writing.update(fraction),
    );
    writing.done(`${checkpointPath} (${formatBytes(length)})`);
  }

  let file: MappedFile | undefined;
  const live = new Map<number, DeviceBuffer>();
  try {
    // 2. Map it without a copy and read its header in place.
    const before = processMemory();
    file = device.mapFile(checkpointPath);
    const header = parseSafetensors(file.contents());
    const after = processMemory();
    phase("mapped");
    const totalBytes = header.tensors.reduce((sum, tensor) => sum + tensor.byteLength, 0);
    console.log(
      `\nmapped ${file.path}: ${header.tensors.length} tensors, ${formatBytes(totalBytes)} of weights`,
    );
    const shown = header.tensors.slice(0, 6);
    const nameWidth = Math.max(...shown.map((tensor) => tensor.name.length));
    const rows = shown.map(
      (tensor) =>
        `  ${tensor.name.padEnd(nameWidth)}  ${tensor.dtype.padEnd(4)}  [${tensor.shape.join(", ")}]`,
    );
    const rowWidth = Math.max(...rows.map((row) => row.length));
    for (const [index, tensor] of shown.entries()) {
      console.log(`${rows[index]?.padEnd(rowWidth)}  ${formatBytes(tensor.byteLength).padStart(11)}`);
    }
    if (header.tensors.length > 6) console.log(`  … and ${header.tensors.length - 6} more`);
    if (before && after) {
      console.log(
        `  resident anonymous memory before/after mapping: ${formatBytes(before.residentAnonymous)} → ${formatBytes(after.residentAnonymous)} (no copy)`,
      );
    }
    show("after mapping the checkpoint");

    // 3. Wire it: the weights stay resident, so the first token is not slowed by paging.
    const wiredLimit = Math.min(info.recommendedMaxWorkingSetSize, file.mappedLength + 64 * 1024 * 1024);
    device.setWiredLimit(wiredLimit);
    phase("wired");
    const wiredNow = processMemory();
    const counters = device.counters();
    console.log(
      `\nwired limit ${formatBytes(wiredLimit)}: nuvec wired ${formatBytes(device.memoryStats().wired)}, the kernel's VmLck ${wiredNow ? formatBytes(wiredNow.locked) : "n/a"}`,
    );
    if (counters.backend.wiringFailures > 0) {
      console.log(
        `  wiring failed ${counters.backend.wiringFailures} time(s): the system refused to lock memory (raise "ulimit -l" or run with CAP_IPC_LOCK); nuvec keeps working unwired`,
      );
    }
    show("after wiring");

    // 4. The workload: reset peaks after loading (the seed's way), then replay a decode.
    const trace = readTrace(tracePath);
    device.resetPeak();
    const processPeakReset = resetProcessPeak();
    const baseline = processMemory();
    phase("workload");
    const replaying = progress(
      `replaying ${trace.header?.name ?? tracePath} (${trace.events.length} events)`,
    );
    const workloadStarted = performance.now();
    let systemAllocations = device.memoryStats().systemAllocations;
    let index = 0;
    for (const event of trace.events) {
      index += 1;
      if (event[0] === "a") {
        const buffer = device.malloc(event[2]);
        live.set(event[1], buffer);
        const now = device.counters().systemAllocations;
        if (now !== systemAllocations) {
          // A new system buffer: touch its pages so the kernel's figures see what nuvec counts.
          systemAllocations = now;
          const bytes = buffer.bytes();
          for (let offset = 0; offset < bytes.length; offset += 4096) bytes[offset] = 1;
          sample();
        }
      } else if (event[0] === "f") {
        live.get(event[1])?.free();
        live.delete(event[1]);
      }
      if (index % 100 === 0) {
        sample();
        replaying.update(index / trace.events.length);
      }
    }
    const workloadMilliseconds = performance.now() - workloadStarted;
    sample();
    replaying.done(`${trace.events.length} events in ${workloadMilliseconds.toFixed(0)} ms`);
    show("after the workload");

    // 5. Peaks, next to the operating system's own figures.
    const stats = device.memoryStats();
    const end = processMemory();
    const workloadCounters = device.counters();
    const facts: [string, string][] = [
      ["nuvec peakWithMapped (active + mapped) since reset", formatBytes(stats.peakWithMapped)],
      [
        "nuvec peak reserved (active + cache) during the workload",
        formatBytes(workloadCounters.peakReserved),
      ],
      ["cache hits / system allocations", `${workloadCounters.cacheHits} / ${stats.systemAllocations}`],
    ];
    if (baseline && end) {
      facts.push(
        [
          `kernel peak resident (VmHWM) since ${processPeakReset ? "reset" : "start"}`,
          formatBytes(end.peakResident),
        ],
        [
          "kernel resident before the workload (Node.js heap, checkpoint pages)",
          formatBytes(baseline.resident),
        ],
        [
          "kernel peak growth during the workload (compare: nuvec peak reserved)",
          formatBytes(end.peakResident - baseline.resident),
        ],
        ["kernel locked (VmLck) / nuvec wired", `${formatBytes(end.locked)} / ${formatBytes(stats.wired)}`],
      );
    }
    console.log("peaks, nuvec's and the kernel's:");
    for (const [label, value] of facts) console.log(`  ${label.padEnd(72)} ${value.padStart(11)}`);
    console.log(
      "  (the kernel counts cached buffers too, which nuvec keeps in `cache`, not `active`, and Node.js itself)",
    );

    // 6. The report.
    mkdirSync(dirname(reportPath), { recursive: true });
    writeFileSync(
      reportPath,
      renderReport({
        title: `nuvec demo on ${info.name}`,
        subtitle: `checkpoint ${formatBytes(file.length)} mapped and wired, then ${trace.events.length} events of ${trace.header?.name ?? "a trace"}`,
        xLabel: "milliseconds since the device was opened",
        samples,
        phases,
        tables,
        facts,
      }),
    );
    console.log(`\nreport: ${reportPath}`);
  } finally {
    for (const buffer of live.values()) buffer.free();
    file?.release();
    device.close();
    if (temporary) rmSync(temporary, { recursive: true, force: true });
  }
  console.log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`demo: ${error.message}\n${usage}`);
    process.exitCode = 2;
  } else {
    const code = (error as { code?: string }).code;
    console.error(`demo: ${(error as Error).message}${code ? ` (${code})` : ""}`);
    process.exitCode = 1;
  }
}
