// The world the Device fuzzer acts on (fuzz.test.ts): the live buffers and mapped files with the bytes
// written into them, the second Device, the tallies for RELIABILITY.md, and checkWorld, which compares the
// Device with the model after every step and sweeps every view. Apart from the commands (fuzz-commands.ts),
// which change the world; this file only says what it holds and checks it.
import { randomFillSync } from "node:crypto";
import type { NativeBackend } from "@nuvec/metal-native";
import { type MockBackend, MockMappedFile } from "@nuvec/metal-native/mock";
import { expect } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { bufferState } from "../../src/device-buffer.js";
import type { Device, DeviceBuffer, MappedFile } from "../../src/index.js";
import { type DeviceModel, sameFigures } from "./model.js";
import { held, hostAvailable, hostUnavailableReason, sectionFigures } from "./support.js";

/** 1 KiB in bytes. */
export const KIB = 1024;
/** 1 MiB in bytes. */
export const MIB = 1024 ** 2;

const scratch = scratchFolder("nuvec-reliability-fuzz-");

/** Files to map: lengths around the page sizes of both platforms. */
export const files = [1, 100, 4095, 4096, 4097, 16384, 16385, 100_000, MIB + 3].map((length, index) => {
  const bytes = randomFillSync(new Uint8Array(length));
  return { path: scratch.write(`file-${index}.bin`, bytes), bytes };
});

/** A buffer the run holds, with its id in the model and the bytes written into it. */
export interface LiveBuffer {
  buffer: DeviceBuffer;
  modelId: number | undefined;
  /** Bytes written through contents(): offset → value. */
  written: Map<number, number>;
  /** Views handed out while it lives (they must stay valid until it is freed). */
  views: Uint8Array[];
}

/** A file the run has mapped, with its id in the model and the bytes the file holds. */
export interface LiveFile {
  file: MappedFile;
  modelId: number;
  source: Uint8Array;
}

/** What the commands act on: the Device, the second Device, what the run holds, and the views it keeps. */
export interface World {
  device: Device;
  openOther: () => Device;
  /** The second Device on the same backend: it holds nothing between steps (see otherDevice). */
  other: Device | undefined;
  /** A trace window being recorded: the sizes of the mallocs it must end with, in order. */
  trace: { mallocs: number[] } | undefined;
  /** Steps since the last full sweep of the bytes and views. */
  sinceSweep: number;
  mock: MockBackend | undefined;
  buffers: LiveBuffer[];
  files: LiveFile[];
  /** Views of freed buffers and released files: must read byteLength 0. */
  stale: Uint8Array[];
  /** Model id of each system buffer the device holds. */
  ids: Map<object, number>;
  wiredLimit: number;
  workingSet: number;
  startCounters: ReturnType<NativeBackend["counters"]>;
  nextMappingId: number;
  /** Views moved away with transfer() (moveAway), held to the end of the run: their buffers stay quarantined. */
  moved: Uint8Array[];
}

/**
 * What the runs of one shape did, for RELIABILITY.md: runs, steps, refusals and cache hits checked, steps on
 * the second Device, trace windows checked, buffers freed after their view was moved away (quarantined), and
 * the property's wall time (measured, never asserted).
 */
const newTally = () => ({
  runs: 0,
  steps: 0,
  refusals: 0,
  cacheHits: 0,
  otherDeviceSteps: 0,
  traceWindows: 0,
  movedAway: 0,
  milliseconds: 0,
});
const tallies: Record<string, ReturnType<typeof newTally>> = {};
sectionFigures("fuzz", { backends: tallies, hostSkipped: hostAvailable ? undefined : hostUnavailableReason });
/** The tally of the shape called `name`, made on first use. */
export const tally = (name: string) => (tallies[name] ??= newTally());

/** A full sweep of every live buffer's written bytes, every mapped file and every stale view this often. */
const SWEEP_EVERY = 64;

/** Expects `actual` to be `expected`; `expect` is called only on a mismatch. */
export function sameValue(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) expect(actual, what).toBe(expected);
}

function atMost(actual: number, bound: number, what: string): void {
  if (!(actual <= bound)) expect(actual, what).toBeLessThanOrEqual(bound);
}

/** The error code of each refusal the model predicts. */
export const refusalCodes = {
  "out-of-memory": "ERR_NUVEC_OUT_OF_MEMORY",
  "resource-limit": "ERR_NUVEC_RESOURCE_LIMIT",
  "too-large": "ERR_NUVEC_BUFFER_TOO_LARGE",
} as const;

/** The `code` of a thrown value. */
export function codeOf(error: unknown): unknown {
  return (error as { code?: unknown }).code;
}

/** The native buffer behind a DeviceBuffer (the device's internal state). */
export function nativeOf(buffer: DeviceBuffer): object | undefined {
  return bufferState(buffer).allocation.buffer as object | undefined;
}

/** The system buffers the second Device holds (none between its steps; counted in case it ever does). */
function otherHeld(world: World): number {
  if (world.other === undefined) return 0;
  const counters = world.other.counters();
  return counters.liveBuffers + counters.cachedBuffers;
}

function checkBuffer(live: LiveBuffer, name: string): void {
  if (live.written.size === 0) return;
  const fresh = new Uint8Array(live.buffer.contents());
  sameValue(fresh.byteLength, live.buffer.length, `${name}: contents() length`);
  for (const view of [fresh, ...live.views]) {
    sameValue(view.byteLength, live.buffer.length, `${name}: a live view's length`);
    for (const [offset, value] of live.written) {
      if (view[offset] !== value) {
        throw new Error(`${name}: byte ${offset} of a live buffer reads ${view[offset]}, wrote ${value}`);
      }
    }
  }
}

function checkFile(live: LiveFile, name: string): void {
  const view = new Uint8Array(live.file.contents());
  sameValue(view.byteLength, live.source.byteLength, `${name}: mapped length`);
  const last = live.source.byteLength - 1;
  for (const offset of [0, last >> 1, last])
    sameValue(view[offset], live.source[offset], `${name}: mapped byte`);
}

/**
 * Every check that holds after any step: the figures always, the bytes of what the step touched (`touched`)
 * at once, and everything else every {@link SWEEP_EVERY} steps (`sweep` forces it).
 */
export function checkWorld(
  model: DeviceModel,
  world: World,
  name: string,
  touched?: LiveBuffer | LiveFile,
  sweep = false,
): void {
  const { device } = world;
  const stats = device.memoryStats();
  sameFigures(stats, model.stats(), `${name}: memoryStats()`);
  sameValue(stats.wiredLimit, world.wiredLimit, `${name}: wiredLimit`);
  atMost(stats.wired, world.wiredLimit, `${name}: wired ≤ wiredLimit`);
  atMost(stats.wiredMapped, stats.wired, `${name}: wiredMapped ≤ wired`);
  const counters = device.counters();
  sameFigures(counters, model.counters(), `${name}: counters()`);
  sameValue(counters.mappings, world.files.length, `${name}: mappings`);
  // The backend holds exactly the system buffers and mappings of the model (and of the second Device).
  const backend = counters.backend;
  const start = world.startCounters;
  const [now, then] = [held(backend), held(start)];
  sameFigures(
    { buffers: now.buffers - then.buffers, mappings: now.mappings - then.mappings },
    { buffers: model.live.size + model.cache.length + otherHeld(world), mappings: model.mappings.size },
    `${name}: what the backend holds`,
  );
  if (world.mock !== undefined) {
    // What the mock reports wired (the second Device wires nothing: its wired limit stays 0).
    sameValue(stats.wired, backend.wiredBytes, `${name}: wired = the mock's wiredBytes`);
  } else if (backend.wiringFailures === start.wiringFailures) {
    sameValue(
      backend.wiredBytes - start.wiredBytes,
      stats.wired,
      `${name}: wired = the backend's wiredBytes`,
    );
  }
  if (touched !== undefined) {
    if ("buffer" in touched) checkBuffer(touched, name);
    else checkFile(touched, name);
  }
  world.sinceSweep += 1;
  if (!sweep && world.sinceSweep < SWEEP_EVERY) return;
  world.sinceSweep = 0;
  if (world.mock !== undefined) {
    // wiredMapped summed independently of the residency manager.
    let wiredMapped = 0;
    for (const set of world.mock.liveResidencySets) {
      for (const allocation of set.committedAllocations()) {
        if (allocation instanceof MockMappedFile && set.isWired(allocation))
          wiredMapped += allocation.allocatedSize;
      }
    }
    sameValue(stats.wiredMapped, wiredMapped, `${name}: wiredMapped summed over the mock's sets`);
  }
  // Data written reads back, through new and old views alike; stale views stay detached.
  for (const live of world.buffers) checkBuffer(live, name);
  for (const live of world.files) checkFile(live, name);
  for (const view of world.stale) sameValue(view.byteLength, 0, `${name}: a stale view's length`);
}
