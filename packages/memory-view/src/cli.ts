#!/usr/bin/env node
// `nuvec-memory-view TRACE [--compare TRACE…] [--html FILE] [--export-torch FILE] [--export-chrome FILE]`:
// replays nuvec traces and PyTorch snapshots under nuvec's cache policies, prints their figures, and writes
// the memory view and the exports. A bad command line or a bad file is one line on stderr and exit code 2.
import { resolve } from "node:path";
import { ALLOCATOR_POLICIES, type TraceHeader } from "@nuvec/allocator";
import { NuvecError, printable } from "@nuvec/stats";
import { HELP, type MemoryViewCommand, readCommand, UsageError } from "./cli/arguments.js";
import {
  comparisonPage,
  factsOf,
  figureTable,
  type ReplayedTrace,
  subtitleOf,
  textTable,
} from "./cli/document.js";
import { prepareOutput, writeOutput } from "./cli/output.js";
import { ChromeTraceExport } from "./export/chrome.js";
import { type TorchExportCounts, TorchSnapshotExport } from "./export/torch.js";
import { streamMarkedTrace } from "./replay/marked-trace.js";
import { replayForView } from "./replay/replay.js";
import { looksLikeTorchSnapshot, readTorchSnapshot } from "./snapshot/torch-snapshot.js";
import { renderMemoryView } from "./view/render.js";

/** A trace's batches with its header read first (the policy and the device may come from it). */
async function opened(
  path: string,
): Promise<{ header: TraceHeader | undefined; batches: AsyncIterable<readonly unknown[]> }> {
  const iterator = streamMarkedTrace(path)[Symbol.asyncIterator]();
  const first = await iterator.next();
  const head = first.done ? undefined : first.value[0];
  const header =
    typeof head === "object" && head !== null && !Array.isArray(head) ? (head as TraceHeader) : undefined;
  const batches = (async function* () {
    if (!first.done) yield first.value;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  })();
  return { header, batches };
}

interface Outputs {
  html?: string;
  exportTorch?: string;
  exportChrome?: string;
}

async function replayOne(
  path: string,
  command: MemoryViewCommand,
  outputs: Outputs,
): Promise<{
  trace: ReplayedTrace;
  torchCounts?: TorchExportCounts;
  chrome?: string[];
  torchPickle?: Uint8Array;
}> {
  const absolute = resolve(path);
  const torch = looksLikeTorchSnapshot(absolute)
    ? readTorchSnapshot(absolute, command.device === undefined ? {} : { device: command.device })
    : undefined;
  if (torch === undefined && command.device !== undefined)
    throw new UsageError("--device applies to PyTorch snapshots only");
  const source =
    torch === undefined
      ? await opened(absolute)
      : { header: torch.items[0] as TraceHeader | undefined, batches: [torch.items] };
  const recorded = (source.header?.allocator as { policy?: unknown } | undefined)?.policy;
  const policies = command.policies ?? [
    typeof recorded === "string" && (ALLOCATOR_POLICIES as readonly string[]).includes(recorded)
      ? recorded
      : (ALLOCATOR_POLICIES[0] as string),
  ];
  const torchExport = outputs.exportTorch === undefined ? undefined : new TorchSnapshotExport();
  const name = String(source.header?.name ?? path);
  const chromeExport = outputs.exportChrome === undefined ? undefined : new ChromeTraceExport(policies, name);
  const result = await replayForView(source.batches, {
    policies,
    ...(command.workingSet === undefined ? {} : { workingSet: command.workingSet }),
    ...(command.memorySize === undefined ? {} : { memorySize: command.memorySize }),
    ...(command.cacheLimit === undefined ? {} : { cacheLimit: command.cacheLimit }),
    ...(command.memoryLimit === undefined ? {} : { memoryLimit: command.memoryLimit }),
    ...(command.reserveRatio === undefined ? {} : { reserveRatio: command.reserveRatio }),
    ...(command.boundedRelease === undefined ? {} : { boundedRelease: command.boundedRelease }),
    record: outputs.html !== undefined,
    ...(torch === undefined ? {} : { labels: torch.allocationLabels }),
    listeners: [torchExport],
    ...(torchExport === undefined && chromeExport === undefined
      ? {}
      : {
          onEvent: (event, index, applied, runs) => {
            torchExport?.event(event, applied[0]);
            chromeExport?.event(index, runs);
          },
        }),
    ...(chromeExport === undefined ? {} : { onMark: (mark, index) => chromeExport.mark(mark, index) }),
  });
  const trace: ReplayedTrace = { name, result, torch };
  const finished = torchExport?.finish();
  return {
    trace,
    ...(finished === undefined ? {} : { torchCounts: finished.counts, torchPickle: finished.pickle }),
    ...(chromeExport === undefined ? {} : { chrome: chromeExport.parts() }),
  };
}

function viewOf(trace: ReplayedTrace): string {
  const { result, torch } = trace;
  const workload = result.workload;
  if (workload === undefined) return "";
  if (torch !== undefined)
    workload.external.push({ name: "PyTorch reserved", at: torch.reserved.at, value: torch.reserved.value });
  const policies = result.outcomes.map((outcome) => outcome.policy);
  return renderMemoryView({
    title: `${printable(trace.name, 60)}: ${workload.events} events, ${policies.length > 1 ? `policies ${policies.join(", ")}` : `policy ${policies[0]}`}`,
    subtitle: subtitleOf(trace),
    workload,
    // A PyTorch snapshot's stack frames, else the trace's own labels (a Device's `malloc(bytes, { label })`).
    labels: torch?.labels ?? result.labels,
    stacks: result.stacks,
    figures: figureTable(trace),
    peaks: result.outcomes.map((outcome) => ({
      active: outcome.stats.peakActive,
      reserved: outcome.peakReserved,
    })),
    facts: factsOf(trace),
  });
}

function summaryOf(trace: ReplayedTrace) {
  const { result, torch } = trace;
  return {
    trace: trace.name,
    events: result.workloadEvents,
    marks: result.marks,
    device: result.device,
    policies: result.outcomes.map((outcome) => ({
      policy: outcome.policy,
      ...outcome.stats,
      cacheHits: outcome.cacheHits,
      systemAllocations: outcome.systemAllocations,
      peakReserved: outcome.peakReserved,
      peakLive: outcome.peakLive,
      outOfMemoryRefusals: outcome.outOfMemoryRefusals,
      nsPerEvent: outcome.nsPerEvent,
    })),
    ...(torch === undefined
      ? {}
      : {
          pytorch: {
            device: torch.device,
            devices: torch.devices,
            peakReserved: torch.peakReserved,
            reservedAtStart: torch.reservedAtStart,
            ...torch.counts,
          },
        }),
  };
}

/** Runs the program on `argv`; its exit code. */
export async function main(argv: string[]): Promise<number> {
  const command = readCommand(argv);
  if (command === undefined) {
    console.log(HELP);
    return 0;
  }
  // Checked (their folders made) before any replay: a bad path fails at once.
  const outputs: Outputs = {};
  if (command.html !== undefined) outputs.html = prepareOutput(command.html, "--html");
  if (command.exportTorch !== undefined)
    outputs.exportTorch = prepareOutput(command.exportTorch, "--export-torch");
  if (command.exportChrome !== undefined)
    outputs.exportChrome = prepareOutput(command.exportChrome, "--export-chrome");
  const done = [];
  for (const path of command.traces) done.push(await replayOne(path, command, outputs));
  const traces = done.map((one) => one.trace);
  const written: Record<string, unknown> = {};
  if (outputs.html !== undefined) {
    const views = traces.map(viewOf);
    writeOutput(
      outputs.html,
      traces.length === 1 ? (views[0] as string) : comparisonPage(traces, views),
      "--html",
    );
    written.html = outputs.html;
  }
  const first = done[0];
  if (outputs.exportTorch !== undefined && first?.torchPickle !== undefined) {
    writeOutput(outputs.exportTorch, first.torchPickle, "--export-torch");
    written.torch = {
      path: outputs.exportTorch,
      policy: first.trace.result.outcomes[0]?.policy,
      ...first.torchCounts,
    };
  }
  if (outputs.exportChrome !== undefined && first?.chrome !== undefined) {
    writeOutput(outputs.exportChrome, first.chrome, "--export-chrome");
    written.chrome = outputs.exportChrome;
  }
  if (command.json) {
    const summaries = traces.map(summaryOf);
    console.log(
      JSON.stringify(summaries.length === 1 ? { ...summaries[0], written } : { traces: summaries, written }),
    );
    return 0;
  }
  console.log(textTable(traces));
  if (written.html !== undefined) console.log(`memory view: ${printable(String(written.html))}`);
  if (outputs.exportTorch !== undefined)
    console.log(`PyTorch snapshot: ${printable(outputs.exportTorch)} (pytorch.org/memory_viz)`);
  if (outputs.exportChrome !== undefined)
    console.log(`Chrome trace: ${printable(outputs.exportChrome)} (ui.perfetto.dev)`);
  return 0;
}

/** Runs `main` as the program: a bad command line or file is one line on stderr and exit code 2. */
export async function run(argv: string[]): Promise<void> {
  try {
    process.exitCode = await main(argv);
  } catch (error) {
    if (error instanceof UsageError || error instanceof NuvecError) {
      process.stderr.write(`nuvec-memory-view: ${printable((error as Error).message, 400)}\n`);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
}

// Not awaited at the top level: the CommonJS build has no top-level await.
void run(process.argv.slice(2));
