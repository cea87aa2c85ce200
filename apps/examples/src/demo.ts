// The main job: open the real device, map a safetensors checkpoint without a copy, wire it, replay a
// decode workload, and show where memory went at each phase, next to the operating system's own figures.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TraceValidator } from "@nuvec/allocator";
import { readTrace } from "@nuvec/allocator/node";
import { Device, type DeviceBuffer, type MappedSafetensors, mapSafetensors } from "@nuvec/device";
import { renderMemoryView, WorkloadRecorder } from "@nuvec/memory-view";
import { formatBytes, MEMORY_STATS_FIELDS, type MemoryStats, printable } from "@nuvec/stats";
import { type CommandLine, parseBytes, readCommandLine, runProgram, wrap } from "./lib/arguments.js";
import { prepareOutputPath, writeOutputFile } from "./lib/output-path.js";
import { processMemory, resetProcessPeak } from "./lib/process-memory.js";
import { fit, progress } from "./lib/progress.js";
import { decoderModel, writeRandomCheckpoint } from "./lib/safetensors.js";
import { statsChanges, statsTable } from "./lib/tables.js";
import { type TemporaryFolder, temporaryFolder } from "./lib/temporary.js";

const here = dirname(fileURLToPath(import.meta.url));
const commandLine: CommandLine = {
  synopsis: "demo [flags]",
  description:
    "Opens the real device, maps a safetensors checkpoint without a copy, wires it, replays a decode workload, and shows where memory went at each phase next to the kernel's figures; writes an HTML report.",
  flags: [
    {
      name: "checkpoint",
      value: "PATH",
      help: "map this safetensors file instead of writing a random one",
      defaultText: "a random one in a temporary folder",
    },
    {
      name: "checkpoint-size",
      value: "BYTES",
      help: "size of the generated checkpoint",
      defaultText: "256MiB",
    },
    {
      name: "trace",
      value: "PATH",
      help: "the workload to replay",
      defaultText: "the shipped GPT-2 decode cut",
    },
    {
      name: "report",
      value: "FILE",
      help: "where to write the HTML report",
      defaultText: "apps/examples/out/demo-report.html",
    },
    {
      name: "verbose",
      short: "v",
      help: "print the full statistics table at each phase, not only what changed",
      defaultText: "off",
    },
  ],
};
/** Every line the demo prints fits this many columns. */
const COLUMNS = 80;

function main(argv: string[]): number {
  const given = readCommandLine(argv, commandLine)?.flags;
  if (given === undefined) return 0;
  const checkpointSize = parseBytes(given.get("checkpoint-size") ?? "256MiB", "--checkpoint-size");
  const tracePath = resolve(given.get("trace") ?? join(here, "..", "traces", "gpt2-decode-cut.ndjson.gz"));
  // Checked (and its folders made) before the demo starts: a bad path fails at once.
  const reportPath = prepareOutputPath(
    given.get("report") ?? join(here, "..", "out", "demo-report.html"),
    "--report",
  );
  const verbose = given.has("verbose");

  const tables: { title: string; stats: MemoryStats }[] = [];
  const started = performance.now();
  const device = Device.open();
  // Each phase prints what changed since the last one (the full table with --verbose); the report has all.
  let shown = device.memoryStats();
  const show = (title: string) => {
    const stats = device.memoryStats();
    tables.push({ title, stats });
    if (verbose) console.log(`\n${statsTable(stats, title, COLUMNS - 1)}\n`);
    else console.log(`\n${title}, what changed:\n${statsChanges(shown, stats).join("\n")}`);
    shown = stats;
  };

  const info = device.info();
  console.log(fit(`nuvec demo on ${info.name} (${info.platform} backend)`, COLUMNS - 1));
  const facts = `memory ${formatBytes(info.memorySize)}, working set ${formatBytes(info.recommendedMaxWorkingSetSize)}, page ${formatBytes(info.pageSize)}, residency sets ${info.residencySupported ? "supported" : "not supported"}`;
  for (const line of wrap(facts, COLUMNS - 3)) console.log(`  ${line}`);

  // 1. A checkpoint: the user's, or a random one written to a temporary folder. Written inside the try, so
  // a failed write (a full disk) still removes the temporary folder; a signal (Ctrl-C, a closed terminal,
  // kill) ends the program at once and the folder's guardian removes it (see lib/temporary.ts).
  let temporary: TemporaryFolder | undefined;
  let checkpointPath = given.get("checkpoint");
  let checkpoint: MappedSafetensors | undefined;
  const live = new Map<number, DeviceBuffer>();
  try {
    if (checkpointPath === undefined) {
      temporary = temporaryFolder("nuvec-demo-");
      checkpointPath = join(temporary.path, "model.safetensors");
      const writing = progress(`writing a ${formatBytes(checkpointSize)} checkpoint of random fp16 weights`);
      const length = writeRandomCheckpoint(checkpointPath, decoderModel(checkpointSize), (fraction) =>
        writing.update(fraction),
      );
      writing.done(formatBytes(length));
    }

    // 2. Map it without a copy; its header is read from the file (a file truncated meanwhile cannot fault).
    const before = processMemory();
    checkpoint = mapSafetensors(device, checkpointPath);
    const { file, header } = checkpoint;
    const after = processMemory();
    const totalBytes = header.tensors.reduce((sum, tensor) => sum + tensor.byteLength, 0);
    const summary = `: ${header.tensors.length} tensors, ${formatBytes(totalBytes)} of weights`;
    console.log(`\nmapped ${fitStart(file.path, COLUMNS - 1 - 7 - summary.length)}${summary}`);
    const listed = header.tensors.slice(0, 6);
    const shapes = listed.map((tensor) => `[${tensor.shape.join(", ")}]`);
    const shapeWidth = Math.max(...shapes.map((shape) => shape.length));
    // Names are cut from the left (their ends tell tensors apart) so each row fits.
    const nameWidth = Math.min(
      Math.max(...listed.map((tensor) => tensor.name.length)),
      COLUMNS - 1 - (2 + 2 + 4 + 2 + shapeWidth + 2 + 11),
    );
    for (const [index, tensor] of listed.entries()) {
      const name = fitStart(tensor.name, nameWidth).padEnd(nameWidth);
      const shape = (shapes[index] ?? "").padEnd(shapeWidth);
      console.log(
        `  ${name}  ${printable(tensor.dtype, 4).padEnd(4)}  ${shape}  ${formatBytes(tensor.byteLength).padStart(11)}`,
      );
    }
    if (header.tensors.length > 6) console.log(`  … and ${header.tensors.length - 6} more`);
    if (before && after) {
      console.log(
        `  anonymous resident memory: ${formatBytes(before.residentAnonymous)} → ${formatBytes(after.residentAnonymous)} after mapping (no copy)`,
      );
    }
    show("after mapping the checkpoint");

    // 3. Wire it: the weights stay resident, so the first token is not slowed by paging.
    const wiredLimit = Math.min(info.recommendedMaxWorkingSetSize, file.allocatedLength + 64 * 1024 * 1024);
    device.setWiredLimit(wiredLimit);
    const wiredNow = processMemory();
    const counters = device.counters();
    // `wired` is residency's figure (what nuvec asked to keep resident, as MLX reports it); what the platform
    // really locked is counters().wiredByPlatform, and the kernel's own account is VmLck. They differ when
    // the system refused to wire (RLIMIT_MEMLOCK).
    console.log(`\nwired limit ${formatBytes(wiredLimit)}:`);
    console.log(`  nuvec wired (residency)      ${formatBytes(device.memoryStats().wired)}`);
    console.log(`  the platform locked          ${formatBytes(counters.wiredByPlatform)}`);
    console.log(`  the kernel's VmLck           ${wiredNow ? formatBytes(wiredNow.locked) : "n/a"}`);
    if (counters.backend.wiringFailures > 0) {
      const why = `wiring failed ${counters.backend.wiringFailures} time(s): the system refused to lock memory (raise "ulimit -l" or run with CAP_IPC_LOCK); nuvec keeps working unwired`;
      for (const line of wrap(why, COLUMNS - 3)) console.log(`  ${line}`);
    }
    show("after wiring");

    // 4. The workload: reset peaks after loading (the seed's way), then replay a decode.
    const trace = readTrace(tracePath);
    device.resetPeak();
    const processPeakReset = resetProcessPeak();
    const baseline = processMemory();
    const replaying = progress(
      `replaying ${trace.header?.name ?? tracePath} (${trace.events.length} events)`,
    );
    // The same check every replay makes (ids allocated once, freed once, after their allocation).
    const validator = new TraceValidator();
    if (trace.header !== undefined) validator.check(trace.header);
    // The workload as the memory view shows it: each allocation, what the device charged, its reserved bytes.
    const recorder = new WorkloadRecorder([info.policy]);
    const workloadStarted = performance.now();
    let systemAllocations = device.memoryStats().systemAllocations;
    let index = 0;
    for (const event of trace.events) {
      index += 1;
      validator.check(event);
      if (event[0] === "a") {
        const buffer = device.malloc(event[2]);
        live.set(event[1], buffer);
        recorder.allocate(event[1], event[2], [buffer.allocatedLength]);
        const now = device.counters().systemAllocations;
        if (now !== systemAllocations) {
          // A new system buffer: touch its pages so the kernel's figures see what nuvec counts.
          systemAllocations = now;
          const bytes = buffer.bytes();
          for (let offset = 0; offset < bytes.length; offset += 4096) bytes[offset] = 1;
        }
      } else if (event[0] === "f") {
        live.get(event[1])?.free();
        live.delete(event[1]);
        recorder.free(event[1]);
      }
      const now = device.memoryStats();
      recorder.endEvent([now.active + now.cache]);
      if (index % 100 === 0) replaying.update(index / trace.events.length);
    }
    const workloadMilliseconds = performance.now() - workloadStarted;
    replaying.done(`${workloadMilliseconds.toFixed(0)} ms`);
    show("after the workload");

    // 5. Peaks, next to the operating system's own figures.
    const stats = device.memoryStats();
    const end = processMemory();
    const workloadCounters = device.counters();
    const peaks: [string, string][] = [
      ["nuvec peakActiveWithMapped (active + mapped)", formatBytes(stats.peakActiveWithMapped)],
      ["nuvec peakReserved (active + cache)", formatBytes(stats.peakReserved)],
      ["cache hits / system allocations", `${workloadCounters.cacheHits} / ${stats.systemAllocations}`],
    ];
    if (baseline && end) {
      peaks.push(
        [
          `kernel peak resident (VmHWM) since ${processPeakReset ? "reset" : "start"}`,
          formatBytes(end.peakResident),
        ],
        ["kernel resident before the workload", formatBytes(baseline.resident)],
        ["kernel peak growth in the workload", formatBytes(end.peakResident - baseline.resident)],
        ["kernel locked (VmLck) / nuvec wired", `${formatBytes(end.locked)} / ${formatBytes(stats.wired)}`],
        ["locked by the platform (wiredByPlatform)", formatBytes(device.counters().wiredByPlatform)],
      );
    }
    console.log("\npeaks, nuvec's and the kernel's (since the reset before the workload):");
    const labelWidth = Math.max(...peaks.map(([label]) => label.length));
    const valueWidth = Math.max(...peaks.map(([, value]) => value.length));
    for (const [label, value] of peaks) {
      console.log(fit(`  ${label.padEnd(labelWidth)}  ${value.padStart(valueWidth)}`, COLUMNS - 1));
    }
    const note =
      "(the kernel also counts Node.js itself, the checkpoint's pages and cached buffers, which nuvec keeps in `cache`, not `active`; compare the growth with nuvec's peak reserved)";
    for (const line of wrap(note, COLUMNS - 3)) console.log(`  ${line}`);

    // 6. The report, whole or not at all (a full file system leaves no truncated report behind).
    writeOutputFile(
      reportPath,
      renderMemoryView({
        title: `nuvec demo on ${info.name}`,
        subtitle: `checkpoint ${formatBytes(file.length)} mapped and wired, then ${trace.events.length} events of ${trace.header?.name ?? "a trace"} (policy ${info.policy})`,
        workload: recorder.finish(),
        // The statistics at each phase, side by side.
        figures: {
          columns: tables.map((table) => table.title),
          rows: MEMORY_STATS_FIELDS.map((name) => ({
            label: name,
            bytes: name !== "systemAllocations",
            values: tables.map((table) => table.stats[name]),
          })),
        },
        peaks: [{ active: stats.peakActive, reserved: stats.peakReserved }],
        facts: peaks,
      }),
      "--report",
    );
    console.log(`\nreport: ${fitStart(reportPath, COLUMNS - 9)}`);
  } finally {
    for (const buffer of live.values()) buffer.free();
    checkpoint?.[Symbol.dispose]();
    device.close();
    temporary?.remove();
  }
  console.log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

/**
 * `text` (a path or a tensor's name, from outside the program) escaped and cut from the left to `width`
 * characters: a path's or a name's end says the most.
 */
function fitStart(text: string, width: number): string {
  return printable(text, width, true);
}

await runProgram("demo", () => main(process.argv.slice(2)));
