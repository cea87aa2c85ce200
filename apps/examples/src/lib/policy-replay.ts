// One pass over a trace that replays it under several cache policies at once, each on its own Device over
// the mock backend, and optionally records the workload for the memory view. Every event goes through the
// allocator's TraceValidator once, the check replayTrace makes. The mock device has the facts the trace's
// header records (what a Device writes as `allocator`) unless the caller gives them, as the memory view's
// own replay does.
import {
  type AllocatorPolicy,
  type BoundedRelease,
  replayOptionsFromHeader,
  type TraceHeader,
  TraceIdMap,
  TraceValidator,
} from "@nuvec/allocator";
import { Device, type DeviceBuffer, type MappedFile } from "@nuvec/device";
import { type RecordedWorkload, type ReplayDevice, WorkloadRecorder } from "@nuvec/memory-view";
import { MockBackend } from "@nuvec/metal-native/mock";
import type { MemoryStats } from "@nuvec/stats";

/** The device and settings every policy runs with; any left out come from the trace's header, else defaults. */
export interface PolicyReplayOptions {
  /** Policy names, as `Device.open({ policy })` takes them. */
  policies: readonly string[];
  /** The mock device's working set (default: the header's, else 8 GiB). */
  workingSet?: number;
  /** The mock device's memory (default: the header's, else twice the working set). */
  memorySize?: number;
  cacheLimit?: number;
  memoryLimit?: number;
  reserveRatio?: number;
  /** The bounded policy's release order (`BOUNDED_RELEASES`; default `DEFAULT_BOUNDED_RELEASE`). */
  boundedRelease?: BoundedRelease;
  /** Record the workload for the memory view. */
  record?: boolean;
  /** Per allocation, in allocation order: an index into the caller's labels (stack frames). */
  labels?: ArrayLike<number>;
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
  /** Nanoseconds per event through the whole Device (checking and recording included). */
  nsPerEvent: number;
}

/** What {@link replayPolicies} returns. */
export interface PolicyReplayResult {
  events: number;
  header: Record<string, unknown> | undefined;
  outcomes: PolicyOutcome[];
  /** The trace's own labels (`["n", id, text]`), in order of definition: what the workload's labels index. */
  labels: string[];
  /** The mock device every policy ran on, and where its facts came from. */
  device: ReplayDevice;
  /** With `record`: the workload, each policy's charged bytes and reserved memory. */
  workload?: RecordedWorkload;
}

interface Run {
  policy: string;
  backend: MockBackend;
  device: Device;
  // The live handles by trace id: bounded by what the trace keeps live, not by its ids (an array indexed by
  // id would grow with the trace's length), and any id a trace can hold.
  buffers: TraceIdMap<DeviceBuffer>;
  mappings: TraceIdMap<MappedFile>;
  refused: number;
}

/** Takes trace id `id`'s handle out of `handles` (`undefined`: none, the allocation was refused). */
function take<T>(handles: TraceIdMap<T>, id: number): T | undefined {
  const handle = handles.get(id);
  if (handle !== undefined) handles.delete(id);
  return handle;
}

const DEFAULT_WORKING_SET = 8 * 1024 ** 3;

/** The mock device's facts: the caller's, else the header's, else the defaults. */
export function deviceFromHeader(
  header: TraceHeader | undefined,
  options: PolicyReplayOptions,
): ReplayDevice {
  const recorded = replayOptionsFromHeader(header);
  const workingSet = options.workingSet ?? recorded.workingSet ?? DEFAULT_WORKING_SET;
  const device: ReplayDevice = {
    from: recorded.workingSet === undefined ? "default" : "header",
    workingSet,
    memorySize: options.memorySize ?? recorded.memorySize ?? 2 * workingSet,
    maxBufferLength: recorded.maxBufferLength ?? workingSet,
    resourceLimit: recorded.resourceLimit ?? 499_000,
    pageSize: recorded.pageSize ?? 16 * 1024,
  };
  if (recorded.policy !== undefined) device.policy = recorded.policy;
  const memoryLimit = options.memoryLimit ?? recorded.memoryLimit;
  const cacheLimit = options.cacheLimit ?? recorded.cacheLimit;
  if (memoryLimit !== undefined) device.memoryLimit = memoryLimit;
  if (cacheLimit !== undefined) device.cacheLimit = cacheLimit;
  const name = header?.device;
  if (typeof name === "string" && name !== "") device.name = name;
  return device;
}

function open(policy: string, options: PolicyReplayOptions, facts: ReplayDevice, header?: TraceHeader): Run {
  const backend = new MockBackend({
    recommendedMaxWorkingSetSize: facts.workingSet,
    memorySize: facts.memorySize,
    maxBufferLength: facts.maxBufferLength,
    resourceLimit: facts.resourceLimit,
    pageSize: facts.pageSize,
    // Only figures are read, never the mock's call log: it then keeps its counters only.
    callLogLimit: 0,
  });
  // The header's policy settings apply to that policy; another one compared runs with its own defaults.
  const recorded = facts.policy === policy ? replayOptionsFromHeader(header) : {};
  const reserveRatio = options.reserveRatio ?? recorded.reserveRatio;
  const boundedRelease = options.boundedRelease ?? recorded.boundedRelease;
  const device = Device.open({
    backend,
    policy: policy as AllocatorPolicy,
    ...(reserveRatio === undefined ? {} : { reserveRatio }),
    ...(boundedRelease === undefined ? {} : { boundedRelease }),
  });
  // As the shared traces' figures: limits set right after opening, memory limit first (it moves the GC limit).
  try {
    if (facts.memoryLimit !== undefined) device.setMemoryLimit(facts.memoryLimit);
    if (facts.cacheLimit !== undefined) device.setCacheLimit(facts.cacheLimit);
  } catch (error) {
    device.close();
    throw error;
  }
  return { policy, backend, device, buffers: new TraceIdMap(), mappings: new TraceIdMap(), refused: 0 };
}

/** Applies one checked event to one policy's device; returns the bytes it charged for an allocation. */
function apply(run: Run, event: readonly unknown[], workingSet: number): number {
  const { device, buffers, mappings } = run;
  switch (event[0]) {
    case "a":
      try {
        const buffer = device.malloc(event[2] as number);
        buffers.set(event[1] as number, buffer);
        return buffer.allocatedLength;
      } catch (error) {
        if ((error as { code?: string }).code !== "ERR_NUVEC_OUT_OF_MEMORY") throw error;
        run.refused += 1;
        return 0;
      }
    case "f":
    // A buffer freed while a view of it was moved away ("q"): the mock holds no memory for a moved view, so
    // it is freed (and may be cached); its give-back ("r") has nothing to do.
    case "q":
      take(buffers, event[1] as number)?.free();
      return 0;
    case "m": {
      const path = `trace-mapping-${event[1]}`;
      run.backend.addFile(path, event[2] as number);
      try {
        mappings.set(event[1] as number, device.mapFile(path));
      } finally {
        // The mapping keeps its bytes; the file goes, so the mock's files stay as few as the live mappings.
        run.backend.removeFile(path);
      }
      return 0;
    }
    case "u":
      take(mappings, event[1] as number)?.free();
      return 0;
    case "l":
      if (event[1] === "memory") device.setMemoryLimit(event[2] as number);
      else if (event[1] === "cache") device.setCacheLimit(event[2] as number);
      else device.setWiredLimit(Math.min(event[2] as number, workingSet));
      return 0;
    case "c":
      device.clearCache();
      return 0;
    case "p":
      device.resetPeak();
      return 0;
  }
  return 0;
}

/**
 * Replays `batches` (arrays of trace items: an optional header object, then events) under every policy of
 * `options.policies` in one pass. Every device is closed before it returns or throws.
 *
 * @throws FormatError for an impossible event (from the validator); a policy name the allocator refuses.
 */
export async function replayPolicies(
  batches: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>,
  options: PolicyReplayOptions,
): Promise<PolicyReplayResult> {
  const runs: Run[] = [];
  let facts: ReplayDevice | undefined;
  // The devices open at the first event, when the header (if any) has been read.
  const openAll = (header: TraceHeader | undefined) => {
    facts = deviceFromHeader(header, options);
    for (const policy of options.policies) runs.push(open(policy, options, facts, header));
    return facts;
  };
  try {
    const validator = new TraceValidator();
    const recorder = options.record ? new WorkloadRecorder(options.policies) : undefined;
    const charged = new Array<number>(runs.length).fill(0);
    const reserved = new Array<number>(runs.length).fill(0);
    let allocations = 0;
    let nanoseconds = 0n;
    const labels: string[] = [];
    const labelIndex = new Map<number, number>();
    for await (const batch of batches) {
      const started = process.hrtime.bigint();
      for (const item of batch) {
        const event = validator.check(item);
        if (event === undefined) continue; // the header
        const device = facts ?? openAll(validator.header);
        if (event[0] === "n") labelIndex.set(event[1], labels.push(event[2]) - 1);
        for (let index = 0; index < runs.length; index += 1) {
          charged[index] = apply(runs[index] as Run, event, device.workingSet);
        }
        // Definitions (a label, a stack) and marks are no step of the workload on the view's event axis.
        if (recorder !== undefined && event[0] === "k") recorder.mark(event[1] as string);
        else if (recorder !== undefined && event[0] !== "n" && event[0] !== "s") {
          if (event[0] === "a") {
            const own = typeof event[3] === "number" ? (labelIndex.get(event[3]) ?? -1) : -1;
            recorder.allocate(event[1], event[2], charged, options.labels?.[allocations] ?? own);
            allocations += 1;
          } else if (event[0] === "f" || event[0] === "q") recorder.free(event[1]);
          let mapped = 0;
          for (let index = 0; index < runs.length; index += 1) {
            const stats = (runs[index] as Run).device.memoryStats();
            reserved[index] = stats.active + stats.cache;
            if (index === 0) mapped = stats.mapped;
          }
          recorder.endEvent(reserved, mapped);
        }
      }
      nanoseconds += process.hrtime.bigint() - started;
    }
    const events = validator.events;
    const device = facts ?? openAll(validator.header);
    const outcomes = runs.map((run) => {
      const stats = run.device.memoryStats();
      const counters = run.device.counters();
      return {
        policy: run.policy,
        stats,
        cacheHits: counters.cacheHits,
        systemAllocations: stats.systemAllocations,
        peakReserved: stats.peakReserved,
        peakLive: counters.peakLive,
        outOfMemoryRefusals: run.refused,
        // The loop's time (reading excluded) shared equally among the policies replayed together.
        nsPerEvent: Math.round((Number(nanoseconds) / runs.length / Math.max(1, events)) * 10) / 10,
      };
    });
    return {
      events,
      header: validator.header as Record<string, unknown> | undefined,
      outcomes,
      labels,
      device,
      ...(recorder === undefined ? {} : { workload: recorder.finish() }),
    };
  } finally {
    for (const run of runs) {
      for (const buffer of run.buffers.values()) buffer.free();
      for (const mapping of run.mappings.values()) mapping.free();
      run.device.close();
    }
  }
}
