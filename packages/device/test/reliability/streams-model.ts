// The multi-stream fuzz's model (streams-fuzz.test.ts): which buffers are live, which were used on which
// streams, which frees are held for several streams, and a shadow Device without streams to which every free
// is applied when the model says its memory goes back to the cache: the Device's figures must equal the
// shadow's after every step. And the memory-safety ledger: every launch of the tag kernel names its buffer's
// owner, and no work of an older owner may run on memory after a newer owner's work or host use did.
import type { MockBackend } from "@nuvec/metal-native/mock";
import { expect } from "vitest";
import type { Device, DeviceBuffer, Stream, StreamEvent } from "../../src/index.js";
import { sameFigures } from "./model.js";

/** A live buffer of the fuzzed device, with its twin in the shadow device. */
export interface ModelBuffer {
  readonly buffer: DeviceBuffer;
  readonly shadow: DeviceBuffer;
  /** The malloc's number: a newer owner has a larger one. */
  readonly owner: number;
  /** The streams (indices) whose work named it. */
  readonly streams: Set<number>;
}

/** A free held for several streams: given back once every probe (an event recorded at the free) completed. */
interface HeldFree {
  readonly shadow: DeviceBuffer;
  readonly bytes: number;
  readonly probes: StreamEvent[];
}

/** One launch of the tag kernel: whose it is, on which memory, and whether it ran. */
export interface TagOp {
  readonly owner: number;
  readonly memory: unknown;
  ran: boolean;
}

/** The model of one fuzz run. */
export class StreamsModel {
  readonly device: Device;
  readonly shadow: Device;
  readonly mock: MockBackend;
  readonly streams: { stream: Stream; released: boolean }[] = [];
  readonly live: ModelBuffer[] = [];
  readonly events: StreamEvent[] = [];
  readonly #held: HeldFree[] = [];
  #owners = 0;
  /** Every tag launch, by its number (the kernel's second argument). */
  readonly ops: TagOp[] = [];
  /** For each memory (native buffer), the newest owner whose work or host use touched it. */
  readonly newest = new Map<unknown, number>();
  violations: string[] = [];

  constructor(device: Device, shadow: Device, mock: MockBackend) {
    this.device = device;
    this.shadow = shadow;
    this.mock = mock;
  }

  /** The next owner's number. */
  nextOwner(): number {
    this.#owners += 1;
    return this.#owners;
  }

  /** Work of `owner` runs (or a host use happens) on `memory`: an older owner after a newer one is a violation. */
  touch(memory: unknown, owner: number, what: string): void {
    const newest = this.newest.get(memory) ?? 0;
    if (owner < newest)
      this.violations.push(`${what}: owner ${owner} after owner ${newest} on the same memory`);
    else this.newest.set(memory, owner);
  }

  /** A host use by `owner`: no launch of an older owner on the memory may still be pending. */
  hostUse(memory: unknown, owner: number, what: string): void {
    for (const op of this.ops) {
      if (!op.ran && op.memory === memory && op.owner < owner) {
        this.violations.push(
          `${what}: a launch of owner ${op.owner} is still pending on the memory of owner ${owner}`,
        );
      }
    }
    this.touch(memory, owner, what);
  }

  /** Open streams (not released) that used `entry`. */
  openUses(entry: ModelBuffer): number[] {
    return [...entry.streams].filter((index) => !this.streams[index]!.released);
  }

  /** `entry` is freed: held when several open streams used it (probes recorded now), else freed in the shadow. */
  free(entry: ModelBuffer): void {
    const open = this.openUses(entry);
    if (open.length >= 2) {
      const probes = open.map((index) => this.streams[index]!.stream.record());
      this.#held.push({ shadow: entry.shadow, bytes: entry.buffer.allocatedLength, probes });
    } else {
      entry.shadow.free();
    }
  }

  /** What the malloc path does first: held frees whose probes all completed go back, in the order held. */
  poll(all = false): void {
    const waiting: HeldFree[] = [];
    for (const held of this.#held) {
      if (all || held.probes.every((probe) => probe.completed)) held.shadow.free();
      else waiting.push(held);
    }
    this.#held.length = 0;
    this.#held.push(...waiting);
  }

  /** Every figure: the device's against the shadow's, and the held frees against `streamPending`. */
  check(step: string): void {
    const stats = this.device.memoryStats();
    sameFigures(stats, this.shadow.memoryStats(), `${step}: memoryStats()`);
    const counters = this.device.counters();
    const shadow = this.shadow.counters();
    const allocator = (c: typeof counters) => ({
      cacheHits: c.cacheHits,
      cacheMisses: c.cacheMisses,
      systemReleases: c.systemReleases,
      liveBuffers: c.liveBuffers,
      cachedBuffers: c.cachedBuffers,
      leakedBuffers: c.leakedBuffers,
      pendingFrees: c.pendingFrees,
    });
    sameFigures(allocator(counters), allocator(shadow), `${step}: counters()`);
    const bytes = this.#held.reduce((sum, held) => sum + held.bytes, 0);
    sameFigures(counters.streamPending, { buffers: this.#held.length, bytes }, `${step}: streamPending`);
    if (this.violations.length > 0) expect(this.violations, `${step}: memory safety`).toEqual([]);
  }
}
