// The stream contract's range tests (run by describeStreamContract where the backend has newBufferRange):
// what a sub-allocating policy hands out reaches a stream as a range of a segment, or as the segment itself
// with the block's offset (what the Device passes). Both address the segment's memory at the same bytes;
// a range's spans are checked against the range, refusals enqueue nothing and change no counter, and a
// released range is refused like a released buffer. With address spaces (mapGranularity, reserveAddressSpace,
// mapMemory), the same over a space's mapped memory, a block across two adjacent mappings included.
import { ArgumentError, StateError } from "@nuvec/stats";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type {
  NativeBackend,
  NativeBuffer,
  NativeKernel,
  NativeModuleSource,
  NativeStream,
} from "../src/index.js";
import { STANDARD_KERNEL_PARAMETERS } from "./stream-contract-kernels.js";
import {
  asFloats,
  buffer,
  elementsShape,
  expectError,
  f32,
  f32Bytes,
  u32,
} from "./stream-contract-support.js";
import { thrown as thrownOf } from "./support.js";

/** Options of {@link describeStreamRangeContract} (those of describeStreamContract it reads). */
export interface StreamRangeContractOptions {
  kernels: NativeModuleSource;
  /** False where the streams take whole buffers only: the tests are skipped. */
  ranges?: boolean;
  /**
   * False where a range has bytes of its own rather than its segment's (the mock: JavaScript cannot alias
   * part of an `ArrayBuffer`): the test that a range and its segment are the same bytes is skipped.
   */
  rangesShareBytes?: boolean;
}

interface Releasable {
  readonly released?: boolean;
  release(): void;
}

/** A segment the tests cut ranges from: a buffer, or an address space with `mapped` bytes mapped from 0. */
interface Segment {
  readonly what: string;
  readonly segment: NativeBuffer;
  /** Where the tests' ranges begin in it (inside mapped memory). */
  readonly base: number;
}

/**
 * Declares the range tests of the stream contract, under `Stream contract, ranges: <name>`; skipped where the
 * backend has no `newBufferRange` or `options.ranges` is false.
 */
export function describeStreamRangeContract(
  name: string,
  open: () => NativeBackend,
  options: StreamRangeContractOptions,
): void {
  describe(`Stream contract, ranges: ${name}`, () => {
    let backend: NativeBackend;
    let made: Releasable[] = [];
    let scale: NativeKernel;
    let add: NativeKernel;

    beforeEach((context) => {
      backend = open();
      made = [];
      if (backend.newBufferRange === undefined) return context.skip("the backend has no newBufferRange");
      if (options.ranges === false) return context.skip("the backend's streams take whole buffers only");
      const module = keep((backend.loadModule as NonNullable<NativeBackend["loadModule"]>)(options.kernels));
      scale = module.kernel("scale", STANDARD_KERNEL_PARAMETERS.scale);
      add = module.kernel("add", STANDARD_KERNEL_PARAMETERS.add);
    });

    afterEach(() => {
      const handles = made.reverse();
      made = [];
      for (const handle of handles) {
        try {
          handle.release();
        } catch (error) {
          if (!(error instanceof StateError && error.code === "ERR_NUVEC_RELEASED")) throw error;
        }
      }
    });

    function keep<T extends Releasable>(handle: T): T {
      made.push(handle);
      return handle;
    }
    const newStream = (): NativeStream => keep((backend.newStream as () => NativeStream)());
    const range = (segment: NativeBuffer, offset: number, length: number): NativeBuffer =>
      keep((backend.newBufferRange as NonNullable<NativeBackend["newBufferRange"]>)(segment, offset, length));
    const floats = async (stream: NativeStream, from: NativeBuffer, offset: number, count: number) =>
      asFloats(await stream.read(from, offset, count * 4));

    /** A plain segment, and with address spaces a space whose first two granules are two mappings. */
    function segments(): Segment[] {
      const list: Segment[] = [{ what: "a buffer", segment: keep(backend.newBuffer(8192)), base: 4096 }];
      const granule = backend.mapGranularity;
      if (granule !== undefined && backend.reserveAddressSpace && backend.mapMemory) {
        const space = keep(backend.reserveAddressSpace(4 * granule));
        backend.mapMemory(space, 0, granule);
        backend.mapMemory(space, granule, granule);
        // 64 bytes before the boundary between the two mappings: a block across both.
        list.push({ what: "an address space", segment: space, base: granule - 64 });
      }
      return list;
    }

    it("a range and its segment at the range's offset are the same bytes, for writes, launches, copies and reads", async (context) => {
      if (options.rangesShareBytes === false)
        return context.skip("the backend's ranges have bytes of their own");
      const stream = newStream();
      for (const { what, segment, base } of segments()) {
        const block = range(segment, base, 128);
        stream.write(block, 0, f32Bytes(Array.from({ length: 32 }, (_, index) => index)));
        stream.write(segment, base + 32, f32Bytes([10, 20, 30, 40, 50, 60, 70, 80]));
        stream.launch(scale, elementsShape(4), [buffer(segment, base + 16), f32(2), u32(4)]);
        stream.launch(add, elementsShape(4), [
          buffer(block, 96),
          buffer(block),
          buffer(segment, base + 32),
          u32(4),
        ]);
        stream.copy(segment, base + 112, block, 16, 16);
        stream.copy(block, 64, segment, base + 48, 16);
        stream.launch(scale, elementsShape(32), [buffer(block), f32(2), u32(32)]);
        const expected = [0, 1, 2, 3, 8, 10, 12, 14, 10, 20, 30, 40, 50, 60, 70, 80];
        expected.push(50, 60, 70, 80, 20, 21, 22, 23, 10, 21, 32, 43, 8, 10, 12, 14);
        const doubled = expected.map((value) => value * 2);
        expect({ what, floats: await floats(stream, block, 0, 32) }).toEqual({ what, floats: doubled });
        expect({ what, floats: await floats(stream, segment, base, 32) }).toEqual({ what, floats: doubled });
      }
    });

    it("refuses spans past a range's end and a released range, enqueueing nothing and changing no counter", async () => {
      const stream = newStream();
      for (const { what, segment, base } of segments()) {
        const block = range(segment, base, 64);
        const other = keep(backend.newBuffer(128));
        stream.write(segment, base, f32Bytes(Array.from({ length: 24 }, (_, index) => index + 1)));
        await stream.done();
        const before = backend.counters();
        const refusals: Array<[string, () => unknown]> = [
          ["write past the end", () => stream.write(block, 60, new Uint8Array(8))],
          ["write at a negative offset", () => stream.write(block, -4, new Uint8Array(4))],
          ["read past the end", () => stream.read(block, 0, 68)],
          ["copy into it past the end", () => stream.copy(block, 32, other, 0, 64)],
          ["copy out of it past the end", () => stream.copy(other, 0, block, 8, 64)],
          [
            "launch at an offset past the end",
            () => stream.launch(scale, elementsShape(1), [buffer(block, 68), f32(0), u32(1)]),
          ],
        ];
        for (const [label, refused] of refusals) {
          expect({ what, label, error: (thrownOf(refused) as Error | undefined)?.constructor }).toEqual({
            what,
            label,
            error: ArgumentError,
          });
        }
        block.release();
        for (const refused of [
          () => stream.write(block, 0, new Uint8Array(4)),
          () => stream.read(block, 0, 4),
          () => stream.copy(block, 0, other, 0, 4),
          () => stream.copy(other, 0, block, 0, 4),
          () => stream.launch(scale, elementsShape(1), [buffer(block), f32(0), u32(1)]),
        ]) {
          expectError(refused, StateError, "ERR_NUVEC_RELEASED");
        }
        expect(backend.counters()).toEqual(before);
        // None of them ran: the segment's bytes, the range's and the 32 after it, are as written.
        expect({ what, floats: await floats(stream, segment, base, 24) }).toEqual({
          what,
          floats: Array.from({ length: 24 }, (_, index) => index + 1),
        });
      }
    });
  });
}
