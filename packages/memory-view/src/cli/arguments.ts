// The command line of `nuvec-memory-view`: its flags, their parsing (sizes with binary suffixes, policies
// the allocator has), and the one kind of error a bad command line is (a line on stderr, exit code 2).
import { parseArgs } from "node:util";
import { ALLOCATOR_POLICIES, BOUNDED_RELEASES } from "@nuvec/allocator";

/** A bad command line: printed as one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** What the command line asks for. */
export interface MemoryViewCommand {
  traces: string[];
  policies: string[] | undefined;
  workingSet?: number;
  memorySize?: number;
  cacheLimit?: number;
  memoryLimit?: number;
  reserveRatio?: number;
  boundedRelease?: "fitting" | "least-recent" | "largest";
  device?: number;
  html?: string;
  exportTorch?: string;
  exportChrome?: string;
  json: boolean;
}

/** The text `--help` prints. */
export const HELP = `usage: nuvec-memory-view TRACE [--compare TRACE…] [flags]

Replays a nuvec trace (.ndjson or .ndjson.gz, one recorded by device.startTrace() or the shared traces) or a
PyTorch memory snapshot (x.pickle from torch.cuda.memory._dump_snapshot, gzipped or not) under nuvec's cache
policies and prints their figures; writes the memory view and the exports when asked. The device's facts and
policy come from the trace's header (what a Device records) unless flags say otherwise. Sizes take binary
suffixes: 4096, 512MiB, 8GiB.

  --compare TRACE…        more traces beside the first (each its own view, one table of figures)
  --html FILE             the memory view: one HTML file, no network needed
  --export-torch FILE     the replay as a PyTorch memory snapshot (pytorch.org/memory_viz opens it)
  --export-chrome FILE    the replay's memory counters as Chrome trace-event JSON (Perfetto opens it)
  --policy P              the cache policy (${ALLOCATOR_POLICIES.join(", ")}); default the header's, else ${ALLOCATOR_POLICIES[0]}
  --policies all|P1,P2,…  several policies side by side (the exports take the first)
  --working-set BYTES     the device's working set; default the header's, else 8GiB
  --memory-size BYTES     the device's memory; default the header's, else 2 × working set
  --cache-limit BYTES     set after opening; default the header's, else the device's
  --memory-limit BYTES    set after opening; default the header's, else the device's
  --reserve-ratio R       the bounded policy's ratio; default the header's, else the allocator's
  --bounded-release WHICH ${BOUNDED_RELEASES.join(", ")}: what the bounded policy releases first
  --device N              a PyTorch snapshot's device; default the one with the most trace entries
  --json                  print one JSON object instead of the table
  -h, --help              this text`;

const SUFFIXES: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/** A byte count with an optional binary suffix (`4096`, `512MiB`, `8GiB`). */
export function parseBytes(text: string, flag: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const multiplier = match ? SUFFIXES[(match[2] ?? "").toLowerCase()] : undefined;
  if (!match || multiplier === undefined) {
    throw new UsageError(`${flag}: "${text}" is not a size (examples: 4096, 512MiB, 8GiB)`);
  }
  const bytes = Math.floor(Number(match[1]) * multiplier);
  if (!Number.isSafeInteger(bytes)) throw new UsageError(`${flag}: ${text} is too large`);
  return bytes;
}

function policyList(text: string, flag: string): string[] {
  if (text === "all") return [...ALLOCATOR_POLICIES];
  const names = [...new Set(text.split(",").map((name) => name.trim()))];
  for (const name of names) {
    if (!(ALLOCATOR_POLICIES as readonly string[]).includes(name))
      throw new UsageError(`${flag}: "${name}" is not a policy (${ALLOCATOR_POLICIES.join(", ")})`);
  }
  if (names.length === 0) throw new UsageError(`${flag}: no policy given`);
  return names;
}

/** The command of `argv` (the arguments after the program's name); `undefined` for `--help`. */
export function readCommand(argv: string[]): MemoryViewCommand | undefined {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      tokens: true,
      options: {
        compare: { type: "string", multiple: true },
        html: { type: "string" },
        "export-torch": { type: "string" },
        "export-chrome": { type: "string" },
        policy: { type: "string" },
        policies: { type: "string" },
        "working-set": { type: "string" },
        "memory-size": { type: "string" },
        "cache-limit": { type: "string" },
        "memory-limit": { type: "string" },
        "reserve-ratio": { type: "string" },
        "bounded-release": { type: "string" },
        device: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message.split("\n")[0] as string);
  }
  const values = parsed.values as Record<string, string | string[] | boolean | undefined>;
  if (values.help) return undefined;
  // The traces in the order given: `--compare A B` gives A as the flag's value and B as a positional.
  const traces: string[] = [];
  for (const token of parsed.tokens ?? []) {
    if (token.kind === "positional") traces.push(token.value);
    else if (token.kind === "option" && token.name === "compare" && token.value !== undefined)
      traces.push(token.value);
  }
  const compared = (values.compare as string[] | undefined) ?? [];
  if (traces.length === 0) throw new UsageError("no TRACE given");
  if (compared.length === 0 && parsed.positionals.length > 1)
    throw new UsageError("one TRACE, or more after --compare");
  const text = (name: string) => values[name] as string | undefined;
  if (text("policy") !== undefined && text("policies") !== undefined)
    throw new UsageError("--policy and --policies: give one");
  const policies =
    text("policies") !== undefined
      ? policyList(text("policies") as string, "--policies")
      : text("policy") !== undefined
        ? policyList(text("policy") as string, "--policy").slice(0, 1)
        : undefined;
  if (text("policy") === "all") throw new UsageError('--policy: one policy ("all" is --policies all)');
  const command: MemoryViewCommand = { traces, policies, json: values.json === true };
  for (const [flag, key] of [
    ["working-set", "workingSet"],
    ["memory-size", "memorySize"],
    ["cache-limit", "cacheLimit"],
    ["memory-limit", "memoryLimit"],
  ] as const) {
    const given = text(flag);
    if (given !== undefined) command[key] = parseBytes(given, `--${flag}`);
  }
  const ratio = text("reserve-ratio");
  if (ratio !== undefined) {
    const value = Number(ratio);
    if (!Number.isFinite(value) || value <= 0)
      throw new UsageError(`--reserve-ratio: "${ratio}" is not a positive number`);
    command.reserveRatio = value;
  }
  const release = text("bounded-release");
  if (release !== undefined) {
    if (!(BOUNDED_RELEASES as readonly string[]).includes(release))
      throw new UsageError(`--bounded-release: "${release}" is not ${BOUNDED_RELEASES.join(", ")}`);
    command.boundedRelease = release as MemoryViewCommand["boundedRelease"];
  }
  const device = text("device");
  if (device !== undefined) {
    if (!/^\d{1,4}$/.test(device)) throw new UsageError(`--device: "${device}" is not a device number`);
    command.device = Number(device);
  }
  for (const [flag, key] of [
    ["html", "html"],
    ["export-torch", "exportTorch"],
    ["export-chrome", "exportChrome"],
  ] as const) {
    const given = text(flag);
    if (given === "") throw new UsageError(`--${flag}: an empty path`);
    if (given !== undefined) command[key] = given;
  }
  if (traces.length > 1 && (command.exportTorch !== undefined || command.exportChrome !== undefined))
    throw new UsageError("--export-torch and --export-chrome take one TRACE (not with --compare)");
  return command;
}
