import type { DeviceFacts } from "@nuvec/native-core";
import { ArgumentError, describeValue, optionsSchema, rules } from "@nuvec/stats";
import type { MockWiringFault } from "./core.js";
import { assertPositiveInteger, isPowerOfTwo } from "./support.js";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/** The mock's device facts when no option says otherwise: those of a 16 GiB Apple silicon Mac. */
export const MOCK_DEFAULTS = Object.freeze({
  name: "Mock device (16 GiB)",
  memorySize: 16 * GIB,
  /** 3/4 of `memorySize` rounded down to a page (derived again when `memorySize` or `pageSize` is set). */
  recommendedMaxWorkingSetSize: 12 * GIB,
  /** Half of `memorySize` (derived again when `memorySize` is set). */
  maxBufferLength: 8 * GIB,
  resourceLimit: 499_000,
  pageSize: 16_384,
  supportsResidencySets: true,
  realMemoryUpTo: 16 * MIB,
  callLogLimit: 10_000,
});

/** How a mock `mapFile` fails: the system call and errno the error carries (default `mmap`, `ENOMEM`). */
export interface MockMappingFailure {
  syscall?: string;
  errno?: string;
}

/**
 * How the mock's streams run their work: `"auto"` (the default) runs each stream's work in order in a
 * macrotask after the calls that enqueued it, so a promise-based caller sees real ordering; `"manual"` runs
 * nothing until the test calls `mock.runStream(stream, count?)` (or a blocking wait, `synchronize()`, asks for
 * it), so streams can complete out of order and events stay pending.
 */
export type MockStreamCompletion = "auto" | "manual";

/** The `streams` option of {@link MockBackendOptions}. */
export interface MockStreamOptions {
  /** See {@link MockStreamCompletion}; default `"auto"`. */
  completion?: MockStreamCompletion;
}

/** Options of {@link MockBackend}: every device fact, memory behaviour and fault injection. */
export interface MockBackendOptions {
  /** Default `"Mock device (<memory> GiB)"`. */
  name?: string;
  /** Default 16 GiB. */
  memorySize?: number;
  /** Default 3/4 of `memorySize`, rounded down to a page. */
  recommendedMaxWorkingSetSize?: number;
  /** Default half of `memorySize`. */
  maxBufferLength?: number;
  /** Default 499000 (macOS's `iogpu.rsrc_limit` fallback). */
  resourceLimit?: number;
  /** A power of two from 1 to 2³⁰; default 16384 (Apple silicon). */
  pageSize?: number;
  /** Default true; when false `newResidencySet()` returns `undefined`. */
  supportsResidencySets?: boolean;
  /**
   * Buffers and mappings of up to this many bytes get real memory (an `ArrayBuffer`, made at the first
   * `contents()`); larger ones have none and their `contents()` throws a `OutOfMemoryError` (`ERR_NUVEC_ALLOCATION_FAILED`).
   * Default 16 MiB; `Infinity` gives real memory to everything.
   */
  realMemoryUpTo?: number;
  /**
   * Whether `mapFile` reads real files through `node:fs` when no virtual file has the path (default true).
   * When false, a path without a virtual file fails like a missing file (`open`, `ENOENT`).
   */
  realFiles?: boolean;
  /** How many calls the call log keeps, newest last (default 10000; 0 keeps none; totals are always kept). */
  callLogLimit?: number;
  /** Fails the `newBuffer` for which it returns true; `attempt` counts valid `newBuffer` calls from 1. */
  failAllocation?: (bytes: number, attempt: number) => boolean;
  /**
   * Fails the `mapFile` for which it returns true or a failure; `attempt` counts valid `mapFile` calls
   * from 1. Checked before the virtual file table and the file system.
   */
  failMapping?: (path: string, attempt: number) => boolean | MockMappingFailure | undefined;
  /** The number of residency sets that can be made; later `newResidencySet()` calls return `undefined`. */
  residencySetLimit?: number;
  /** Wiring that fails: `true` for all, a predicate for some. Failures are counted, never thrown. */
  failWiring?: MockWiringFault;
  /**
   * The granularity of address spaces (a power of two from `pageSize` to `maxBufferLength`, at most 2³⁰):
   * with it the mock has `reserveAddressSpace`,
   * `mapMemory` and `unmapMemory`, as a CUDA device (and the segments policy's large pool is expandable).
   * Default: none.
   */
  mapGranularity?: number;
  /** How streams complete their work (see {@link MockStreamOptions}). */
  streams?: MockStreamOptions;
}

/** The largest page or granularity the mock takes: its arithmetic on them is 32-bit. */
const LARGEST_POWER = 2 ** 30;

/** The rule of `pageSize` and `mapGranularity`, as their messages state it. */
function checkPowerOfTwo(value: unknown, name: string): void {
  if (typeof value !== "number" || !isPowerOfTwo(value)) {
    throw new ArgumentError(
      name,
      `${name} must be a power of two from 1 to 2^30 (${LARGEST_POWER}), got ${describeValue(value)}`,
    );
  }
}

/** An option that must be `undefined` or of `type` (`"function"`, `"boolean"`), stated in the message. */
function checkOptional(
  options: MockBackendOptions,
  name: keyof MockBackendOptions,
  rule: string,
  ok: (value: unknown) => boolean,
): void {
  const value = options[name];
  if (value !== undefined && !ok(value)) {
    throw new ArgumentError(name, `${name} must be ${rule}, got ${describeValue(value)}`);
  }
}

/** Every option of {@link MockBackendOptions}, each taken as given here (mockSettings checks them). */
const MOCK_OPTIONS = (() => {
  const any = rules.optional(rules.rule("any value", () => true));
  const names: (keyof MockBackendOptions)[] = [
    "name",
    "memorySize",
    "recommendedMaxWorkingSetSize",
    "maxBufferLength",
    "resourceLimit",
    "pageSize",
    "supportsResidencySets",
    "realMemoryUpTo",
    "realFiles",
    "callLogLimit",
    "failAllocation",
    "failMapping",
    "residencySetLimit",
    "failWiring",
    "mapGranularity",
    "streams",
  ];
  return optionsSchema("new MockBackend()", Object.fromEntries(names.map((name) => [name, any])));
})();

/**
 * `options` read once: an object with no key but {@link MockBackendOptions}' (an unknown or misspelt one is
 * an `ArgumentError` naming it), each option's getter run once; the plain object of what was given.
 */
export function readMockOptions(options: unknown): MockBackendOptions {
  if (typeof options !== "object" || options === null) {
    throw new ArgumentError("options", `options must be an object, got ${describeValue(options)}`);
  }
  return MOCK_OPTIONS.parse(options) as MockBackendOptions;
}

function optionalPositiveInteger(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  assertPositiveInteger(value, name);
  return value;
}

/** The device facts a {@link MockBackend} states, and its memory settings: every option checked. */
export function mockSettings(options: MockBackendOptions): {
  facts: DeviceFacts;
  realMemoryUpTo: number;
  callLogLimit: number;
  mapGranularity: number | undefined;
  completion: MockStreamCompletion;
} {
  if (typeof options !== "object" || options === null) {
    throw new ArgumentError("options", `options must be an object, got ${describeValue(options)}`);
  }
  const memorySize = optionalPositiveInteger(options.memorySize, "memorySize", MOCK_DEFAULTS.memorySize);
  const pageSize = options.pageSize ?? MOCK_DEFAULTS.pageSize;
  checkPowerOfTwo(pageSize, "pageSize");
  checkOptional(options, "realFiles", "a boolean", (value) => typeof value === "boolean");
  for (const name of ["failAllocation", "failMapping"] as const) {
    checkOptional(options, name, "a function", (value) => typeof value === "function");
  }
  checkOptional(
    options,
    "failWiring",
    "a boolean or a function",
    (value) => typeof value === "boolean" || typeof value === "function",
  );
  checkOptional(
    options,
    "residencySetLimit",
    "a non-negative safe integer",
    (value) => Number.isSafeInteger(value) && (value as number) >= 0,
  );
  const name = options.name ?? `Mock device (${Math.round((memorySize / GIB) * 100) / 100} GiB)`;
  if (typeof name !== "string" || name === "") {
    throw new ArgumentError("name", `name must be a non-empty string, got ${describeValue(name)}`);
  }
  const supportsResidencySets = options.supportsResidencySets ?? MOCK_DEFAULTS.supportsResidencySets;
  if (typeof supportsResidencySets !== "boolean") {
    throw new ArgumentError("supportsResidencySets", "supportsResidencySets must be a boolean");
  }
  const realMemoryUpTo = options.realMemoryUpTo ?? MOCK_DEFAULTS.realMemoryUpTo;
  if (
    realMemoryUpTo !== Number.POSITIVE_INFINITY &&
    !(Number.isSafeInteger(realMemoryUpTo) && realMemoryUpTo >= 0)
  ) {
    throw new ArgumentError(
      "realMemoryUpTo",
      `realMemoryUpTo must be a non-negative safe integer or Infinity, got ${describeValue(realMemoryUpTo)}`,
    );
  }
  const callLogLimit = options.callLogLimit ?? MOCK_DEFAULTS.callLogLimit;
  if (!Number.isSafeInteger(callLogLimit) || callLogLimit < 0) {
    throw new ArgumentError(
      "callLogLimit",
      `callLogLimit must be a non-negative safe integer, got ${describeValue(callLogLimit)}`,
    );
  }
  const mapGranularity = options.mapGranularity;
  if (mapGranularity !== undefined) checkPowerOfTwo(mapGranularity, "mapGranularity");
  const completion = streamCompletion(options.streams);
  const maxBufferLength = optionalPositiveInteger(
    options.maxBufferLength,
    "maxBufferLength",
    Math.max(1, Math.floor(memorySize / 2)),
  );
  // Address space is mapped in whole granules of whole pages, and a space is one buffer.
  if (mapGranularity !== undefined && (mapGranularity < pageSize || mapGranularity > maxBufferLength)) {
    throw new ArgumentError(
      "mapGranularity",
      `mapGranularity must be a power of two from pageSize (${pageSize}) to maxBufferLength (${maxBufferLength}), got ${mapGranularity}`,
    );
  }
  return {
    facts: {
      name,
      platform: "mock",
      memorySize,
      recommendedMaxWorkingSetSize: optionalPositiveInteger(
        options.recommendedMaxWorkingSetSize,
        "recommendedMaxWorkingSetSize",
        Math.max(pageSize, Math.floor((memorySize * 0.75) / pageSize) * pageSize),
      ),
      maxBufferLength,
      resourceLimit: optionalPositiveInteger(
        options.resourceLimit,
        "resourceLimit",
        MOCK_DEFAULTS.resourceLimit,
      ),
      pageSize,
      supportsResidencySets,
    },
    realMemoryUpTo,
    callLogLimit,
    mapGranularity,
    completion,
  };
}

/** The `streams` option checked: `undefined`, or an object with no key but `completion`. */
function streamCompletion(streams: unknown): MockStreamCompletion {
  if (streams === undefined) return "auto";
  if (typeof streams !== "object" || streams === null || Array.isArray(streams)) {
    throw new ArgumentError("streams", `streams must be an object, got ${describeValue(streams)}`);
  }
  const keys = Object.keys(streams).filter((key) => key !== "completion");
  if (keys.length > 0) {
    throw new ArgumentError("streams", `streams has no option ${JSON.stringify(keys[0])} (only completion)`);
  }
  const completion = (streams as MockStreamOptions).completion ?? "auto";
  if (completion !== "auto" && completion !== "manual") {
    throw new ArgumentError(
      "streams.completion",
      `streams.completion must be "auto" or "manual", got ${describeValue(completion)}`,
    );
  }
  return completion;
}
