// One pass over a trace that replays it under several cache policies at once, each on its own allocator,
// and optionally records the workload for the memory view. Every event goes through the allocator's
// TraceValidator once, the check every replay makes. The device's facts come from the trace's header (what
// a Device records) unless the caller gives them.
import {
  ALLOCATOR_POLICIES,
  type AllocatorPolicy,
  isTraceEvent,
  replayOptionsFromHeader,
  type TraceHeader,
  TraceValidator,
} from "@nuvec/allocator";
import type { MemoryStats } from "@nuvec/stats";
import { type RecordedWorkload, WorkloadRecorder } from "../view/recorder.js";
import type { DeviceFacts, SourceListener } from "./addressed-source.js";
import { type Applied, PolicyRun, type PolicyRunOptions } from "./policy-run.js";

/** The device and settings to replay with; any left out come from the trace's header, else the defaults. */
export interface ViewReplayOptions {
  /** Policy names, as the allocator takes them. */
  policies: readonly string[];
  workingSet?: number;
  memorySize?: number;
  cacheLimit?: number;
  memoryLimit?: number;
  reserveRatio?: number;
  boundedRelease?: "fitting" | "least-recent" | "largest";
  /** Record the workload for the memory view. */
  record?: boolean;
  /** Per allocation, in allocation order: an index into the caller's labels (stack frames). */
  labels?: ArrayLike<number>;
  /** Per policy (same order): who hears of its segments (the exports). */
  listeners?: readonly (SourceListener | undefined)[];
  /** After each checked event: what it did under each policy (allocations only), and the runs. */
  onEvent?: (
    event: readonly unknown[],
    index: number,
    applied: readonly (Applied | undefined)[],
    runs: readonly PolicyRun[],
  ) => void;
  /** For each mark (`["k", name]`), before the event it precedes. */
  onMark?: (name: string, index: number) => void;
}

/** What one policy ends with. */
export interface PolicyOutcome {
  policy: string;
  stats: MemoryStats;
  cacheHits: number;
  systemAllocations: number;
  peakReserved: number;
  peakLive: number;
  outOfMemoryRefusals: number;
  /** Nanoseconds per event of the replay loop, shared among the policies replayed together. */
  nsPerEvent: number;
}

/** The device a replay ran on, and where its facts came from. */
export interface ReplayDevice extends DeviceFacts {
  /** `"header"`: the trace's header recorded them (flags may still have changed some); `"default"`: none did. */
  from: "header" | "default";
  /** The header's policy, when it records one. */
  policy?: string;
  memoryLimit?: number;
  cacheLimit?: number;
  /** A name the header gives the device (its `device` field, when it is text). */
  name?: string;
}

/** What {@link replayForView} returns. */
export interface ViewReplayResult {
  /** Items the trace's validator counted as events (definitions and, where the format has them, marks too). */
  events: number;
  /** The workload's own events: those that allocate, free, map or change a limit (no definition, no mark). */
  workloadEvents: number;
  header: TraceHeader | undefined;
  outcomes: PolicyOutcome[];
  device: ReplayDevice;
  /** Marks seen (`["k", name]` items). */
  marks: number;
  /**
   * The trace's own labels (`["n", id, text]` events, a Device's `malloc(bytes, { label })` and mapped files),
   * in order of definition: what the workload's allocation labels index when no `labels` option was given.
   */
  labels: string[];
  /** The trace's own stacks (`["s", id, frames]` events), in order of definition: what `workload.stack` indexes. */
  stacks: string[][];
  /** With `record`: the workload, each policy's charged bytes and reserved memory, mapped files, marks. */
  workload?: RecordedWorkload;
}

const DEFAULT_WORKING_SET = 8 * 1024 ** 3;
const PAGE = 16 * 1024;
/** Whether the allocator's trace format knows marks itself (then the validator counts them as events). */
const MARKS_ARE_EVENTS = isTraceEvent(["k", "step"]);

/** Trace items that define a label, a stack or a mark: no event on the view's axis. */
const DEFINITIONS: ReadonlySet<string> = new Set(["n", "s", "k"]);

/** A mark item: `["k", name]`, the name text. */
export function isMark(item: unknown): item is readonly ["k", string] {
  return Array.isArray(item) && item.length === 2 && item[0] === "k" && typeof item[1] === "string";
}

function runOptions(
  header: TraceHeader | undefined,
  options: ViewReplayOptions,
  policy: string,
): PolicyRunOptions {
  const recorded = replayOptionsFromHeader(header);
  const given = <T>(value: T | undefined, fallback: T | undefined) =>
    value === undefined ? fallback : value;
  const workingSet = given(options.workingSet, recorded.workingSet) ?? DEFAULT_WORKING_SET;
  const facts: PolicyRunOptions = {
    policy: policy as AllocatorPolicy,
    workingSet,
    memorySize: given(options.memorySize, recorded.memorySize) ?? 2 * workingSet,
    maxBufferLength: recorded.maxBufferLength ?? Number.MAX_SAFE_INTEGER,
    resourceLimit: recorded.resourceLimit ?? 499_000,
    pageSize: recorded.pageSize ?? PAGE,
  };
  if (recorded.mapGranularity !== undefined) facts.mapGranularity = recorded.mapGranularity;
  const memoryLimit = given(options.memoryLimit, recorded.memoryLimit);
  const cacheLimit = given(options.cacheLimit, recorded.cacheLimit);
  if (memoryLimit !== undefined) facts.memoryLimit = memoryLimit;
  if (cacheLimit !== undefined) facts.cacheLimit = cacheLimit;
  // The header's policy settings apply to that policy; another one compared runs with its own defaults.
  const samePolicy = recorded.policy === policy;
  const reserveRatio = given(options.reserveRatio, samePolicy ? recorded.reserveRatio : undefined);
  const boundedRelease = given(options.boundedRelease, samePolicy ? recorded.boundedRelease : undefined);
  if (reserveRatio !== undefined) facts.reserveRatio = reserveRatio;
  if (boundedRelease !== undefined) facts.boundedRelease = boundedRelease;
  if (samePolicy && recorded.segments !== undefined) facts.segments = recorded.segments;
  return facts;
}

function deviceOf(header: TraceHeader | undefined, first: PolicyRunOptions): ReplayDevice {
  const recorded = replayOptionsFromHeader(header);
  const fromHeader = recorded.workingSet !== undefined;
  const device: ReplayDevice = {
    from: fromHeader ? "header" : "default",
    workingSet: first.workingSet,
    memorySize: first.memorySize,
    maxBufferLength: first.maxBufferLength,
    resourceLimit: first.resourceLimit,
    pageSize: first.pageSize,
  };
  if (first.mapGranularity !== undefined) device.mapGranularity = first.mapGranularity;
  if (recorded.policy !== undefined) device.policy = recorded.policy;
  if (first.memoryLimit !== undefined) device.memoryLimit = first.memoryLimit;
  if (first.cacheLimit !== undefined) device.cacheLimit = first.cacheLimit;
  const name = header?.device;
  if (typeof name === "string" && name !== "") device.name = name;
  return device;
}

/**
 * The device a replay of a trace with `header` runs on: the caller's working set, memory and limits, else the
 * header's, else the defaults (8 GiB of working set, twice that of memory), and where they came from.
 */
export function replayDevice(header: TraceHeader | undefined, options: ViewReplayOptions): ReplayDevice {
  // The policy decides only that policy's own settings, none of the device's facts.
  return deviceOf(header, runOptions(header, options, options.policies[0] ?? ALLOCATOR_POLICIES[0]));
}

/**
 * Replays `batches` (arrays of trace items: an optional header object, then events, with optional `["k",
 * name]` marks) under every policy of `options.policies` in one pass.
 *
 * @throws FormatError for an impossible event (from the validator); ArgumentError for a policy or a setting
 * the allocator refuses.
 */
export async function replayForView(
  batches: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>,
  options: ViewReplayOptions,
): Promise<ViewReplayResult> {
  const validator = new TraceValidator();
  const recorder = options.record ? new WorkloadRecorder(options.policies) : undefined;
  const count = options.policies.length;
  const charged = new Array<number>(count).fill(0);
  const reserved = new Array<number>(count).fill(0);
  const applied = new Array<Applied | undefined>(count).fill(undefined);
  let runs: PolicyRun[] | undefined;
  let device: ReplayDevice | undefined;
  let header: TraceHeader | undefined;
  let allocations = 0;
  let marks = 0;
  let nanoseconds = 0n;
  // The trace's labels ("n" events): their texts, and each label id's index among them.
  const labels: string[] = [];
  const labelIndex = new Map<number, number>();
  const stacks: string[][] = [];
  const stackIndex = new Map<number, number>();
  const open = () => {
    const settings = options.policies.map((policy) => runOptions(header, options, policy));
    runs = settings.map((setting, index) => new PolicyRun(setting, options.listeners?.[index]));
    device = deviceOf(header, settings[0] as PolicyRunOptions);
    return runs;
  };
  let workloadEvents = 0;
  for await (const batch of batches) {
    const started = process.hrtime.bigint();
    for (const item of batch) {
      if (isMark(item)) {
        options.onMark?.(item[1], validator.events);
        recorder?.mark(item[1]);
        marks += 1;
        if (!MARKS_ARE_EVENTS) continue;
      }
      const event = validator.check(item) as readonly unknown[] | undefined;
      if (event === undefined) {
        header = validator.header;
        continue;
      }
      if (event[0] === "n") labelIndex.set(event[1] as number, labels.push(event[2] as string) - 1);
      else if (event[0] === "s")
        stackIndex.set(event[1] as number, stacks.push([...(event[2] as string[])]) - 1);
      const active = runs ?? open();
      for (let index = 0; index < count; index += 1) {
        const result = (active[index] as PolicyRun).apply(event);
        applied[index] = result;
        charged[index] = result?.charged ?? 0;
      }
      options.onEvent?.(event, validator.events - 1, applied, active);
      if (!DEFINITIONS.has(event[0] as string)) workloadEvents += 1;
      // Definitions (a label, a stack) and marks the format counts as events are no step of the workload:
      // the view's event axis counts only what allocates, frees or maps.
      if (recorder !== undefined && !DEFINITIONS.has(event[0] as string)) {
        if (event[0] === "a") {
          recorder.allocate(
            event[1] as number,
            event[2] as number,
            charged,
            options.labels?.[allocations] ??
              (typeof event[3] === "number" ? (labelIndex.get(event[3]) ?? -1) : -1),
            typeof event[4] === "number" ? (stackIndex.get(event[4]) ?? -1) : -1,
          );
          allocations += 1;
        } else if (event[0] === "f" || event[0] === "q") recorder.free(event[1] as number);
        let mapped = 0;
        for (let index = 0; index < count; index += 1) {
          const stats = (active[index] as PolicyRun).allocator.memoryStats();
          reserved[index] = stats.active + stats.cache;
          if (index === 0) mapped = stats.mapped;
        }
        recorder.endEvent(reserved, mapped);
      }
    }
    nanoseconds += process.hrtime.bigint() - started;
  }
  const events = validator.events;
  const finished = runs ?? open();
  const outcomes = finished.map((run) => {
    const stats = run.allocator.memoryStats();
    const counters = run.allocator.counters();
    return {
      policy: run.policy,
      stats,
      cacheHits: counters.cacheHits,
      systemAllocations: stats.systemAllocations,
      peakReserved: stats.peakReserved,
      peakLive: counters.peakLive,
      outOfMemoryRefusals: run.refused,
      nsPerEvent: Math.round((Number(nanoseconds) / Math.max(1, count) / Math.max(1, events)) * 10) / 10,
    };
  });
  return {
    events,
    workloadEvents,
    header: validator.header,
    outcomes,
    device: device as ReplayDevice,
    marks,
    labels,
    stacks,
    ...(recorder === undefined ? {} : { workload: recorder.finish() }),
  };
}
