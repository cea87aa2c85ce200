// Replays an allocation trace (the shared traces' format, or one recorded with Device.startTrace) with
// @nuvec/memory-view's replay (nuvec's allocator on the device the trace's header records), and prints the
// statistics (a table, or one JSON object with --json). The trace is read as a stream (memory bounded by what
// it keeps live, not by its length) and every event goes through the allocator's TraceValidator, the same
// check replayTrace makes.
import { resolve } from "node:path";
import {
  ALLOCATOR_POLICIES,
  BOUNDED_RELEASES,
  type BoundedRelease,
  DEFAULT_BOUNDED_RELEASE,
  DEFAULT_RESERVE_RATIO,
} from "@nuvec/allocator";
import { streamTraceBatches } from "@nuvec/allocator/node";
import {
  deviceLine,
  figureTable,
  looksLikeTorchSnapshot,
  readTorchSnapshot,
  renderMemoryView,
  type TorchWorkload,
  torchFacts,
} from "@nuvec/memory-view";
import { formatBytes, printable } from "@nuvec/stats";
import {
  type CommandLine,
  JSON_FLAG,
  parseBytes,
  parsePositiveNumber,
  readCommandLine,
  runProgram,
  UsageError,
} from "./lib/arguments.js";
import { prepareOutputPath, writeOutputFile } from "./lib/output-path.js";
import { type PolicyOutcome, replayPolicies } from "./lib/policy-replay.js";
import { columnsOf, progress } from "./lib/progress.js";
import { statsTable } from "./lib/tables.js";

const POLICY_LIST = ALLOCATOR_POLICIES.join("|");
const commandLine: CommandLine = {
  synopsis: "replay TRACE [flags]",
  description:
    "Replays a trace (NDJSON, gzipped or not: the shared traces, or one recorded by device.startTrace(); or a PyTorch memory snapshot, x.pickle from torch.cuda.memory._dump_snapshot) under nuvec's allocator on the device its header records and prints its memory statistics. Sizes take binary suffixes: 4096, 512MiB, 8GiB. Shows progress on a terminal (not with --json or when piped).",
  flags: [
    {
      name: "working-set",
      value: "BYTES",
      help: "the mock device's working set",
      defaultText: "the trace header's, else 8GiB",
    },
    {
      name: "memory-size",
      value: "BYTES",
      help: "the mock device's memory",
      defaultText: "the trace header's, else 2 × working set",
    },
    { name: "cache-limit", value: "BYTES", help: "set after opening", defaultText: "the device's" },
    { name: "memory-limit", value: "BYTES", help: "set after opening", defaultText: "the device's" },
    { name: "policy", value: POLICY_LIST, help: "the cache policy", defaultText: ALLOCATOR_POLICIES[0] },
    {
      name: "compare",
      value: "P1,P2,…",
      help: `replay under each of these policies at once ("all": ${ALLOCATOR_POLICIES.join(", ")}) and print a table of their figures`,
      defaultText: "off",
    },
    {
      name: "device",
      value: "N",
      help: "a PyTorch snapshot's device to replay",
      defaultText: "the one with the most trace entries",
    },
    {
      name: "reserve-ratio",
      value: "R",
      help: "the bounded policy's ratio",
      defaultText: `${DEFAULT_RESERVE_RATIO}`,
    },
    {
      name: "bounded-release",
      value: "WHICH",
      help: `${BOUNDED_RELEASES.join(", ")}: what the bounded policy releases first`,
      defaultText: DEFAULT_BOUNDED_RELEASE,
    },
    JSON_FLAG,
    {
      name: "html",
      value: "FILE",
      help: "also write the memory view: every allocation over time, each policy's cache and reserved memory",
      defaultText: "none",
    },
  ],
};

async function main(argv: string[]): Promise<number> {
  const parsed = readCommandLine(argv, commandLine);
  if (parsed === undefined) return 0;
  const { flags: given, positionals } = parsed;
  // A byte-count flag's value (`undefined` when not given).
  const bytesFlag = (name: string) =>
    given.has(name) ? parseBytes(given.get(name) as string, `--${name}`) : undefined;
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? "no TRACE given" : "one TRACE only");
  const workingSet = bytesFlag("working-set");
  const memorySize = bytesFlag("memory-size");
  const policies = policiesOf(given.get("policy"), given.get("compare"));
  const comparing = given.has("compare");
  const deviceIndex = given.has("device") ? parseDevice(given.get("device") as string) : undefined;
  const reserveRatio = given.has("reserve-ratio")
    ? parsePositiveNumber(given.get("reserve-ratio") as string, "--reserve-ratio")
    : undefined;
  const boundedRelease = given.get("bounded-release") as BoundedRelease | undefined;
  if (boundedRelease !== undefined && !BOUNDED_RELEASES.includes(boundedRelease)) {
    throw new UsageError(
      `--bounded-release: "${boundedRelease}" is not one of ${BOUNDED_RELEASES.join(", ")}`,
    );
  }
  const cacheLimit = bytesFlag("cache-limit");
  const memoryLimit = bytesFlag("memory-limit");
  const json = given.has("json");
  // Checked (and its folders made) before the replay runs: a bad path fails at once.
  const htmlPath = given.has("html") ? prepareOutputPath(given.get("html") as string, "--html") : undefined;
  const tracePath = resolve(positionals[0] as string);

  // A PyTorch snapshot is read whole (a pickle has no streaming form) and becomes one batch of events.
  const torch: TorchWorkload | undefined = looksLikeTorchSnapshot(tracePath)
    ? readTorchSnapshot(tracePath, deviceIndex === undefined ? {} : { device: deviceIndex })
    : undefined;
  if (torch === undefined && deviceIndex !== undefined)
    throw new UsageError("--device applies to PyTorch snapshots only");
  // Progress only on a terminal and only for --json-less runs; a short trace finishes before it shows.
  const bar = progress(`replaying ${printable(positionals[0] as string, 60, true)}`, process.stdout, {
    quiet: json,
    ttyOnly: true,
  });
  const onProgress = (bytesRead: number, totalBytes: number | undefined) =>
    bar.update(totalBytes ? bytesRead / totalBytes : 0);
  const result = await replayPolicies(
    torch === undefined ? streamTraceBatches(tracePath, { onProgress }) : [torch.items],
    {
      policies,
      ...(workingSet === undefined ? {} : { workingSet }),
      ...(memorySize === undefined ? {} : { memorySize }),
      ...(cacheLimit === undefined ? {} : { cacheLimit }),
      ...(memoryLimit === undefined ? {} : { memoryLimit }),
      ...(reserveRatio === undefined ? {} : { reserveRatio }),
      ...(boundedRelease === undefined ? {} : { boundedRelease }),
      record: htmlPath !== undefined,
      ...(torch === undefined ? {} : { labels: torch.allocationLabels }),
    },
  );
  const { events } = result;
  // The header's name comes from the file: printed escaped and cut (the JSON output escapes it itself).
  const rawName = String(result.header?.name ?? positionals[0]);
  const traceName = printable(rawName, 60);
  bar.done(`${events} events`);
  const summaries = result.outcomes.map((outcome) => summary(rawName, outcome, events));
  if (json) {
    const pytorch = torch === undefined ? {} : { pytorch: torchSummary(torch) };
    console.log(
      JSON.stringify(
        comparing
          ? { trace: rawName, events, policies: summaries, ...pytorch }
          : { ...summaries[0], ...pytorch },
      ),
    );
  } else {
    const columns = Math.min(80, columnsOf(process.stdout));
    if (comparing) {
      console.log(compareTable(traceName, events, result.outcomes, torch));
    } else {
      const outcome = result.outcomes[0] as PolicyOutcome;
      console.log(
        statsTable(outcome.stats, `${traceName}: ${events} events, policy ${outcome.policy}`, columns),
      );
      console.log(`cache hits ${outcome.cacheHits}, system allocations ${outcome.systemAllocations},`);
      console.log(
        `peak reserved ${formatBytes(outcome.peakReserved)}, refused ${outcome.outOfMemoryRefusals},`,
      );
      console.log(`${outcome.nsPerEvent} ns/event (the memory view's replay)`);
    }
    if (torch !== undefined) {
      const { counts } = torch;
      console.log(
        `PyTorch device ${torch.device}: peak reserved ${formatBytes(torch.peakReserved)}; ${counts.skippedFrees} frees of blocks allocated before recording skipped`,
      );
    }
  }
  if (htmlPath !== undefined && result.workload !== undefined) {
    const workload = result.workload;
    if (torch !== undefined)
      workload.external.push({
        name: "PyTorch reserved",
        at: torch.reserved.at,
        value: torch.reserved.value,
      });
    const path = htmlPath;
    // Whole or not at all: a full file system leaves no truncated report behind.
    writeOutputFile(
      path,
      renderMemoryView({
        title: `${traceName}: ${workload.events} events${comparing ? `, policies ${policies.join(", ")}` : `, policy ${policies[0]}`}`,
        subtitle: subtitleOf(result.header?.workload, deviceLine(result.device)),
        workload,
        labels: torch?.labels ?? result.labels,
        figures: figureTable({ name: rawName, result, torch }),
        peaks: result.outcomes.map((outcome) => ({
          active: outcome.stats.peakActive,
          reserved: outcome.peakReserved,
        })),
        facts: torch === undefined ? [] : torchFacts(torch),
      }),
      "--html",
    );
    if (!json) console.log(`report: ${path}`);
  }
  return 0;
}

/** The view's subtitle: the workload the header names, then the device and where its facts came from. */
function subtitleOf(workload: unknown, device: string): string {
  return typeof workload === "string" && workload !== "" ? `${printable(workload, 120)} · ${device}` : device;
}

/** The policies to replay: `--compare`'s list (or all), else `--policy` alone; each one the allocator has. */
function policiesOf(policy: string | undefined, compare: string | undefined): string[] {
  const known = (name: string, flag: string) => {
    if (!(ALLOCATOR_POLICIES as readonly string[]).includes(name)) {
      throw new UsageError(`${flag}: "${name}" is not a policy (${ALLOCATOR_POLICIES.join(", ")})`);
    }
    return name;
  };
  if (compare === undefined) return [known(policy ?? (ALLOCATOR_POLICIES[0] as string), "--policy")];
  if (policy !== undefined) throw new UsageError("--policy and --compare: give one");
  if (compare === "all") return [...ALLOCATOR_POLICIES];
  const names = compare.split(",").map((name) => name.trim());
  const chosen = [...new Set(names.map((name) => known(name, "--compare")))];
  if (chosen.length === 0) throw new UsageError("--compare: no policy given");
  return chosen;
}

function parseDevice(text: string): number {
  if (!/^\d{1,4}$/.test(text)) throw new UsageError(`--device: "${text}" is not a device number`);
  return Number(text);
}

/** The one-line JSON figures of one policy (the form `--json` has always printed). */
function summary(trace: string, outcome: PolicyOutcome, events: number) {
  return {
    trace,
    policy: outcome.policy,
    ...outcome.stats,
    events,
    cacheHits: outcome.cacheHits,
    systemAllocations: outcome.systemAllocations,
    peakReserved: outcome.peakReserved,
    peakLive: outcome.peakLive,
    outOfMemoryRefusals: outcome.outOfMemoryRefusals,
    nsPerEvent: outcome.nsPerEvent,
  };
}

function torchSummary(torch: TorchWorkload) {
  return {
    device: torch.device,
    devices: torch.devices,
    peakReserved: torch.peakReserved,
    reservedAtStart: torch.reservedAtStart,
    ...torch.counts,
  };
}

const FIGURE_ROWS: { label: string; bytes: boolean; of: (outcome: PolicyOutcome) => number }[] = [
  { label: "peak active", bytes: true, of: (outcome) => outcome.stats.peakActive },
  { label: "peak reserved", bytes: true, of: (outcome) => outcome.peakReserved },
  { label: "system allocations", bytes: false, of: (outcome) => outcome.systemAllocations },
  { label: "cache hits", bytes: false, of: (outcome) => outcome.cacheHits },
  { label: "refused (out of memory)", bytes: false, of: (outcome) => outcome.outOfMemoryRefusals },
];

/** The comparison as text: one column per policy, within 80 columns for up to four policies. */
function compareTable(
  trace: string,
  events: number,
  outcomes: PolicyOutcome[],
  torch: TorchWorkload | undefined,
): string {
  const width = 14;
  const label = 24;
  const columns = [...outcomes.map((outcome) => outcome.policy), ...(torch === undefined ? [] : ["PyTorch"])];
  const lines = [
    `${trace}: ${events} events`,
    `${"".padEnd(label)}${columns.map((name) => name.padStart(width)).join("")}`,
  ];
  for (const row of FIGURE_ROWS) {
    const values = outcomes.map((outcome) => {
      const value = row.of(outcome);
      return row.bytes ? formatBytes(value) : String(value);
    });
    if (torch !== undefined)
      values.push(row.label === "peak reserved" ? formatBytes(torch.peakReserved) : "");
    lines.push(`${row.label.padEnd(label)}${values.map((value) => value.padStart(width)).join("")}`);
  }
  return lines.join("\n");
}
await runProgram("replay", () => main(process.argv.slice(2)));
