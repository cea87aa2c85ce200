// Shared by the device's tests: the run's length (CI or full), whether the real host backend is here, the
// figures each reliability test file writes for RELIABILITY.md, readings of the kernel's view of this
// process, child processes, stand-in backends, what the backend holds, and waiting for the collector.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { readTrace } from "@nuvec/allocator/node";
import { loadNativeBackend, type NativeBackend } from "@nuvec/metal-native";
import { afterAll, describe, expect, it, vi } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

/** packages/device */
export const packageDirectory = resolve(here, "../..");

/** `NUVEC_RELIABILITY=full` runs everything at full length (`pnpm --filter @nuvec/device reliability`). */
export const full = process.env.NUVEC_RELIABILITY === "full";

/** A number from the environment, else the CI or the full default. */
export function budget(name: string, ci: number, fullLength: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : full ? fullLength : ci;
}

/** Why the real host backend cannot be used here, or `undefined` when it can. */
export const hostUnavailableReason: string | undefined = (() => {
  try {
    const backend = loadNativeBackend();
    if (backend.platform !== "host") return `the native backend is ${backend.platform}, not host`;
    // The device frees through detachContents: a backend without it cannot run the Device yet.
    const probe = backend.newBuffer(256);
    const detaches = typeof (probe as { detachContents?: unknown }).detachContents === "function";
    probe.release();
    return detaches ? undefined : "the native backend's buffers have no detachContents()";
  } catch (error) {
    return (error as Error).message.split("\n")[0];
  }
})();

/** Whether the real host backend (mmap, mlock) loads and runs the Device. */
export const hostAvailable = hostUnavailableReason === undefined;

/** The real host backend (only call when {@link hostAvailable}). */
export function hostBackend(): NativeBackend {
  return loadNativeBackend();
}

/**
 * A backend that is `inner` (its device facts and its calls, not its optional ones) but for `overrides`: a
 * stand-in for a device these tests cannot have (Metal, device memory, other facts).
 */
export function wrapBackend(inner: NativeBackend, overrides: Partial<NativeBackend>): NativeBackend {
  const { name, platform, memorySize, recommendedMaxWorkingSetSize, maxBufferLength, resourceLimit } = inner;
  return {
    name,
    platform,
    memorySize,
    recommendedMaxWorkingSetSize,
    maxBufferLength,
    resourceLimit,
    pageSize: inner.pageSize,
    supportsResidencySets: inner.supportsResidencySets,
    newBuffer: (bytes) => inner.newBuffer(bytes),
    mapFile: (path) => inner.mapFile(path),
    newResidencySet: () => inner.newResidencySet(),
    attachResidencySet: (set, queue) => inner.attachResidencySet(set, queue),
    counters: () => inner.counters(),
    ...overrides,
  };
}

/** Where the host backend is missing: ` (skipped: <why>)`, for a title. */
const hostSkipped = hostAvailable ? "" : ` (skipped: ${hostUnavailableReason})`;

/** `describe` on the real host backend, titled `<title> on the host backend`: skipped, saying why, without it. */
export function describeOnHost(title: string, body: () => void): void {
  describe.skipIf(!hostAvailable)(`${title} on the host backend${hostSkipped}`, body);
}

/** `it` on the real host backend: skipped, saying why, without it. */
export function itOnHost(title: string, body: () => unknown, timeout?: number): void {
  it.skipIf(!hostAvailable)(`${title}${hostSkipped}`, body, timeout);
}

/** The backend's counters that say what it holds. */
type Held = Pick<
  ReturnType<NativeBackend["counters"]>,
  "buffersMade" | "buffersReleased" | "mappingsMade" | "mappingsReleased" | "bufferBytes" | "wiredBytes"
>;

/** What a backend holds by its counters: buffers and mappings (made less released), buffer and wired bytes. */
export function held(counters: Held) {
  return {
    buffers: counters.buffersMade - counters.buffersReleased,
    mappings: counters.mappingsMade - counters.mappingsReleased,
    bufferBytes: counters.bufferBytes,
    wiredBytes: counters.wiredBytes,
  };
}

/** Expects the backend to hold no more buffers, mappings, buffer bytes or wired bytes at `end` than at `start`. */
export function expectNothingHeldSince(start: Held, end: Held): void {
  expect(held(end)).toEqual(held(start));
}

/** Whether packages/device/dist is built: the child processes import @nuvec/device. */
export const deviceBuilt = existsSync(join(packageDirectory, "dist/index.js"));

const isRoot = process.getuid?.() === 0;

/**
 * Why a child process using the Device on the host backend cannot run here (with RLIMIT_MEMLOCK lowered, when
 * `memlock`), or `undefined`.
 */
export function childUnavailableReason(memlock = false): string | undefined {
  if (!hostAvailable) return hostUnavailableReason;
  if (!deviceBuilt) return "packages/device/dist is not built (the child processes import @nuvec/device)";
  if (!memlock) return undefined;
  if (spawnSync("prlimit", ["--version"]).status !== 0) return "prlimit is missing";
  // As root, CAP_IPC_LOCK ignores RLIMIT_MEMLOCK: it must be dropped (setpriv).
  if (isRoot && spawnSync("setpriv", ["--version"]).status !== 0)
    return "running as root without setpriv: CAP_IPC_LOCK would ignore RLIMIT_MEMLOCK";
  return undefined;
}

/** What a child process did: its exit, its output, and its report (its last stdout line, as JSON if it is). */
export interface ChildResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  report: unknown;
}

/**
 * Runs `children/<script>` with Node (after `nodeOptions`), under a 64 KiB RLIMIT_MEMLOCK with CAP_IPC_LOCK
 * dropped when `memlock` is set.
 */
export function runChild(
  script: string,
  options: { args?: string[]; nodeOptions?: string[]; memlock?: boolean; timeout?: number } = {},
): ChildResult {
  const command = options.memlock ? ["prlimit", "--memlock=65536:65536"] : [];
  if (options.memlock && isRoot) command.push("setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock");
  const path = join(packageDirectory, "test/reliability/children", script);
  command.push(process.execPath, ...(options.nodeOptions ?? []), path, ...(options.args ?? []));
  const result = spawnSync(command[0]!, command.slice(1), {
    encoding: "utf8",
    cwd: packageDirectory,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
  });
  const last = result.stdout.trim().split("\n").at(-1) ?? "";
  let report: unknown = last;
  try {
    report = JSON.parse(last);
  } catch {
    // left as text: the assertions show it
  }
  return {
    status: result.status,
    signal: result.signal,
    stdout: result.stdout,
    stderr: result.stderr,
    report,
  };
}

/** A field of /proc/self/status in bytes (`VmLck`, `VmSize`, `RssAnon`, …); 0 when absent. */
export function procStatus(field: string): number {
  if (!existsSync("/proc/self/status")) return 0;
  const match = readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return match ? Number(match[1]) * 1024 : 0;
}

/** Lines of /proc/self/maps (mappings of this process); 0 when absent. */
function procMapsCount(): number {
  if (!existsSync("/proc/self/maps")) return 0;
  return readFileSync("/proc/self/maps", "utf8").split("\n").filter(Boolean).length;
}

/** The kernel's view of this process: its locked and virtual memory (VmLck, VmSize) and its mappings. */
export function processFigures(): { vmLck: number; vmSize: number; maps: number } {
  return { vmLck: procStatus("VmLck"), vmSize: procStatus("VmSize"), maps: procMapsCount() };
}

/** Where each test file writes its figures: one JSON file per section, merged by report.mjs. */
export const figuresDirectory = join(packageDirectory, ".reliability", "sections");

/**
 * Records figures for RELIABILITY.md under `section` (merged into what the same section already wrote in
 * this run, so several tests of one file can add to it).
 */
function recordFigures(section: string, figures: Record<string, unknown>): void {
  mkdirSync(figuresDirectory, { recursive: true });
  const file = join(figuresDirectory, `${section}.json`);
  let previous: Record<string, unknown> = {};
  if (existsSync(file)) {
    try {
      const read = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
      // A section written by an earlier run is replaced, not added to.
      if (read.pid === process.pid) previous = read;
    } catch {
      previous = {};
    }
  }
  const merged = {
    ...previous,
    ...figures,
    pid: process.pid,
    mode: full ? "full" : "ci",
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    writtenAt: new Date().toISOString(),
  };
  writeFileSync(file, `${JSON.stringify(merged, null, 2)}\n`);
}

/** The figures a test file records for RELIABILITY.md under `section` (filled in by its tests, written after). */
export function sectionFigures<T extends Record<string, unknown>>(section: string, figures: T): T {
  afterAll(() => recordFigures(section, figures));
  return figures;
}

/** An allocation or a free of a trace. */
export type ReplayEvent = readonly ["a", number, number] | readonly ["f", number];

/**
 * The three real traces (the repository's copies, fixtures/traces): the first `events` of each of their
 * allocations and frees (a trace may hold other events, e.g. mappings recorded by a Device).
 */
export function soakTraces(events: number): { path: string; events: ReplayEvent[] }[] {
  const traces = resolve(packageDirectory, "../../fixtures/traces");
  return ["gpt2-generate", "bert-dynamic", "resnet50-train"].map((name) => {
    const path = join(traces, `${name}.ndjson.gz`);
    const all = readTrace(path).events as readonly (readonly unknown[])[];
    return {
      path,
      events: all
        .filter((event): event is ReplayEvent => event[0] === "a" || event[0] === "f")
        .slice(0, events),
    };
  });
}

/**
 * Captures the process warnings emitted from now on instead of printing them (a test checks them); `restore()`
 * puts `process.emitWarning` back.
 */
export function captureWarnings(): {
  warnings: Array<{ message: string; options: unknown }>;
  restore(): void;
} {
  const warnings: Array<{ message: string; options: unknown }> = [];
  const emitWarning = vi.spyOn(process, "emitWarning").mockImplementation(((
    message: string,
    options: unknown,
  ) => {
    warnings.push({ message: String(message), options });
  }) as typeof process.emitWarning);
  return { warnings, restore: () => emitWarning.mockRestore() };
}

let transferFunction: ((this: ArrayBuffer) => ArrayBuffer) | undefined;

/** Moves `view`'s memory to a new ArrayBuffer (`ArrayBuffer.prototype.transfer`), detaching `view`. */
export function transfer(view: ArrayBuffer): ArrayBuffer {
  // Node 20 has transfer behind a flag, in a context made after setting it.
  if (transferFunction === undefined) {
    setFlagsFromString("--harmony-rab-gsab-transfer");
    transferFunction = runInNewContext("ArrayBuffer.prototype.transfer") as (
      this: ArrayBuffer,
    ) => ArrayBuffer;
  }
  return transferFunction.call(view);
}

/** A few turns of the event loop: settled promises' reactions and deferred frees run. */
export async function turns(count = 1): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) await nextTurn();
}

/** Collects garbage, a turn at a time, until `done()` (at most `rounds` times); the tests run with --expose-gc. */
export async function collectUntil(done: () => boolean, rounds = 50): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with --expose-gc (vitest.config.ts)");
  for (let round = 0; round < rounds && !done(); round += 1) {
    gc();
    await turns();
  }
}

/** A promise and the functions that settle it. */
export function deferred() {
  let resolve!: (value?: unknown) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/** The refusal of a buffer or mapped file of another Device named in `operation` (e.g. `"write()"`). */
export const foreignHandle = (operation: string) => ({
  name: "ArgumentError",
  code: "ERR_NUVEC_FOREIGN_BUFFER",
  argument: "handle",
  message: `${operation}: the buffer or mapped file belongs to another device`,
});
