// The contract every NativeBackend with streams must keep (newStream, loadModule: streams.ts), run on the mock
// (metal-native's test/stream-contract-mock.test.ts), the host addon and CUDA, each with its own standard
// kernels (stream-contract-kernels.ts), through the NativeBackend interface only (the mock's own: src/mock/).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ArgumentError, FormatError, NuvecError, type NuvecErrorCode, StateError } from "@nuvec/stats";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type {
  NativeAllocation,
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeKernel,
  NativeModule,
  NativeModuleSource,
  NativeStream,
} from "../src/index.js";
import { STANDARD_KERNEL_PARAMETERS } from "./stream-contract-kernels.js";
import { describeStreamRangeContract, type StreamRangeContractOptions } from "./stream-contract-ranges.js";
import {
  asFloats,
  buffer,
  elementsShape,
  expectError,
  f32,
  f32Bytes,
  u32,
} from "./stream-contract-support.js";
import { patternBytes, thrown } from "./support.js";

/** Options of {@link describeStreamContract}. */
export interface StreamContractOptions extends StreamRangeContractOptions {
  /** A module source with this backend's `fill`, `scale` and `add` (stream-contract-kernels.ts says them). */
  kernels: NativeModuleSource;
  /**
   * A source whose entry for this backend does not compile or load: the suite expects a `FormatError`
   * (`ERR_NUVEC_MODULE`) with the compiler's or loader's text in `log`. Without it that test is skipped.
   */
  brokenModule?: NativeModuleSource;
  /**
   * Whether work never runs within the call that enqueued it (the mock: a macrotask later), so that an event
   * recorded after a launch is not complete at once. Default false: the suite then only checks that it is
   * complete once `done()` resolved.
   */
  deferred?: boolean;
  /** False where the streams take whole buffers only, not `newBufferRange`'s: the range test is skipped. */
  ranges?: boolean;
}

/** Anything the suite makes and releases after each test. */
interface Releasable {
  readonly released?: boolean;
  release(): void;
}

/**
 * Declares (with vitest) the tests every {@link NativeBackend} with streams must pass, under the title
 * `Stream contract: <name>`. `open` is called before each test; it may return a new backend or the same one.
 */
export function describeStreamContract(
  name: string,
  open: () => NativeBackend,
  options: StreamContractOptions,
): void {
  describe(`Stream contract: ${name}`, () => {
    let backend: NativeBackend;
    let made: Releasable[] = [];
    let directory: string;
    let kernels: NativeModule;
    let fill: NativeKernel;
    let scale: NativeKernel;
    let add: NativeKernel;

    beforeAll(() => {
      directory = mkdtempSync(join(tmpdir(), "nuvec-stream-contract-"));
    });

    afterAll(() => {
      rmSync(directory, { recursive: true, force: true });
    });

    beforeEach(() => {
      backend = open();
      made = [];
      if (backend.newStream === undefined || backend.loadModule === undefined) {
        throw new Error(`${name}: the backend has no newStream/loadModule`);
      }
      kernels = keep(backend.loadModule(options.kernels));
      fill = kernels.kernel("fill", STANDARD_KERNEL_PARAMETERS.fill);
      scale = kernels.kernel("scale", STANDARD_KERNEL_PARAMETERS.scale);
      add = kernels.kernel("add", STANDARD_KERNEL_PARAMETERS.add);
    });

    afterEach(() => {
      // Streams first (they run what is left), then modules, buffers and mappings, newest first.
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
    const newBuffer = (bytes: number): NativeBuffer => keep(backend.newBuffer(bytes));
    /** A buffer holding `values` as floats, written on `stream`. */
    function floatsOn(stream: NativeStream, values: readonly number[]): NativeBuffer {
      const made = newBuffer(values.length * 4);
      stream.write(made, 0, f32Bytes(values));
      return made;
    }
    async function readFloats(stream: NativeStream, from: NativeAllocation, offset = 0, count?: number) {
      const length = count === undefined ? from.length - offset : count * 4;
      return asFloats(await stream.read(from, offset, length));
    }

    it("runs a stream in order: write, launches, read give the exact bytes", async () => {
      const stream = newStream();
      const values = [1.5, -2, 3.25, 1e-3, 7, 0, -0.1, 1e6];
      const x = floatsOn(stream, values);
      stream.launch(scale, elementsShape(8), [buffer(x), f32(3), u32(8)]);
      stream.launch(scale, elementsShape(8), [buffer(x), f32(0.5), u32(6)]);
      const expected = values.map((value, index) =>
        index < 6 ? Math.fround(Math.fround(value * 3) * 0.5) : Math.fround(value * 3),
      );
      expect(await readFloats(stream, x)).toEqual(expected.map((value) => Math.fround(value)));
      const y = newBuffer(32);
      const out = newBuffer(32);
      stream.launch(fill, elementsShape(8), [buffer(y), f32(0.25), u32(8)]);
      stream.launch(add, elementsShape(8), [buffer(out), buffer(x), buffer(y), u32(8)]);
      expect(await readFloats(stream, out)).toEqual(
        expected.map((value) => Math.fround(Math.fround(value) + 0.25)),
      );
    });

    it("takes a write's bytes at the call, and a buffer argument from its offset", async () => {
      const stream = newStream();
      const source = f32Bytes([1, 2, 3, 4]);
      const x = newBuffer(16);
      stream.write(x, 0, source);
      source.fill(0xff); // after the call: the stream has its own copy
      stream.launch(scale, elementsShape(2), [buffer(x, 8), f32(10), u32(2)]);
      expect(await readFloats(stream, x)).toEqual([1, 2, 30, 40]);
    });

    it("records events: complete once the work before them ran; done() and synchronize()", async () => {
      const stream = newStream();
      const x = floatsOn(stream, [1, 2, 3, 4]);
      stream.launch(scale, elementsShape(4), [buffer(x), f32(2), u32(4)]);
      const event = keep(stream.record());
      expect(event.stream).toBe(stream);
      if (options.deferred === true) expect(event.query()).toBe(false);
      await event.done();
      expect(event.query()).toBe(true);
      await event.done(); // again: still resolves
      const later = keep(stream.record());
      later.synchronize();
      expect(later.query()).toBe(true);
      const empty = keep(newStream().record());
      await empty.done();
      expect(empty.query()).toBe(true);
      event.release();
      expectError(() => event.release(), StateError, "ERR_NUVEC_RELEASED");
      expectError(() => event.query(), StateError, "ERR_NUVEC_RELEASED");
      expectError(() => stream.wait(event), StateError, "ERR_NUVEC_RELEASED");
      await stream.done();
      stream.synchronize();
    });

    it("orders work across streams with wait(event)", async () => {
      const first = newStream();
      const second = newStream();
      const n = 4096;
      const x = newBuffer(n * 4);
      const y = newBuffer(n * 4);
      second.write(y, 0, new Uint8Array(n * 4)); // the second stream has work before the first has any
      first.launch(fill, elementsShape(n), [buffer(x), f32(1.5), u32(n)]);
      for (let round = 0; round < 8; round += 1)
        first.launch(scale, elementsShape(n), [buffer(x), f32(2), u32(n)]);
      const filled = keep(first.record());
      second.wait(filled);
      second.copy(y, 0, x, 0, n * 4);
      second.launch(scale, elementsShape(n), [buffer(y), f32(0.5), u32(n)]);
      const values = await readFloats(second, y);
      expect(values).toHaveLength(n);
      expect(new Set(values)).toEqual(new Set([192])); // 1.5 · 2⁸ / 2
      expect(filled.query()).toBe(true);
      await first.done();
    });

    it("reads and writes at offsets and lengths, and refuses spans outside a buffer", async () => {
      const stream = newStream();
      const x = newBuffer(64);
      const pattern = patternBytes(64, 7);
      stream.write(x, 0, pattern);
      stream.write(x, 10, Uint8Array.of(1, 2, 3));
      const expected = pattern.slice();
      expected.set([1, 2, 3], 10);
      expect(await stream.read(x, 0, 64)).toEqual(expected);
      expect(await stream.read(x, 9, 5)).toEqual(expected.slice(9, 14));
      expect(await stream.read(x, 64, 0)).toEqual(new Uint8Array(0));
      const before = backend.counters();
      expectError(
        () => stream.write(x, 62, Uint8Array.of(1, 2, 3)),
        ArgumentError,
        "ERR_NUVEC_INVALID_ARGUMENT",
      );
      expectError(() => stream.write(x, -1, Uint8Array.of(1)), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expectError(() => stream.read(x, 60, 5), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expectError(() => stream.read(x, 1.5, 1), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expectError(() => stream.copy(x, 0, x, 32, 33), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expectError(() => stream.copy(x, 40, x, 0, 32), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expect(backend.counters()).toEqual(before);
      expect(await stream.read(x, 0, 64)).toEqual(expected);
    });

    it("copies between buffers, within one, and from a mapped file", async () => {
      const stream = newStream();
      const a = newBuffer(48);
      const b = newBuffer(48);
      const pattern = patternBytes(48, 11);
      stream.write(a, 0, pattern);
      stream.write(b, 0, new Uint8Array(48));
      stream.copy(b, 4, a, 16, 20);
      const expectedB = new Uint8Array(48);
      expectedB.set(pattern.subarray(16, 36), 4);
      expect(await stream.read(b, 0, 48)).toEqual(expectedB);
      stream.copy(a, 8, a, 0, 16); // overlapping: as if through a copy
      const expectedA = pattern.slice();
      expectedA.set(pattern.subarray(0, 16), 8);
      expect(await stream.read(a, 0, 48)).toEqual(expectedA);
      const fileBytes = patternBytes(5000, 3);
      const path = join(directory, `mapped-${Math.random().toString(36).slice(2)}.bin`);
      writeFileSync(path, fileBytes);
      const file = keep(backend.mapFile(path));
      const c = newBuffer(64);
      stream.copy(c, 0, file, 4000, 64);
      expect(await stream.read(c, 0, 64)).toEqual(fileBytes.subarray(4000, 4064));
      expect(await stream.read(file, 4990, 10)).toEqual(fileBytes.subarray(4990));
      expectError(() => stream.copy(c, 0, file, 4990, 11), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
    });

    it("keeps a buffer released while its work is pending alive until the work ran", async () => {
      const stream = newStream();
      const before = backend.counters();
      const x = backend.newBuffer(4096);
      const y = newBuffer(4096);
      stream.write(x, 0, f32Bytes(Array.from({ length: 1024 }, (_, index) => index)));
      stream.launch(scale, elementsShape(1024), [buffer(x), f32(2), u32(1024)]);
      stream.copy(y, 0, x, 0, 4096);
      const read = stream.read(x, 4000, 96);
      x.release(); // while the write, the launch, the copy and the read are pending
      expect(x.released).toBe(true);
      expectError(
        () => stream.launch(scale, elementsShape(1), [buffer(x), f32(2), u32(1)]),
        StateError,
        "ERR_NUVEC_RELEASED",
      );
      expectError(() => stream.read(x, 0, 4), StateError, "ERR_NUVEC_RELEASED");
      expectError(() => stream.write(x, 0, Uint8Array.of(1)), StateError, "ERR_NUVEC_RELEASED");
      const doubled = Array.from({ length: 1024 }, (_, index) => index * 2);
      expect(asFloats(await read)).toEqual(doubled.slice(1000));
      expect(await readFloats(stream, y)).toEqual(doubled);
      await stream.done();
      const after = backend.counters();
      expect(after.buffersMade - before.buffersMade).toBe(2);
      expect(after.buffersReleased - before.buffersReleased).toBe(1);
      expect(after.bufferBytes - before.bufferBytes).toBe(y.allocatedSize);
    });

    it("takes ranges of buffers and of address spaces (what sub-allocating policies hand out) as buffers", async (context) => {
      const newRange = backend.newBufferRange?.bind(backend);
      if (newRange === undefined) return context.skip("the backend has no newBufferRange");
      if (options.ranges === false) return context.skip("the backend's streams take whole buffers only");
      const stream = newStream();
      const ranges: NativeBuffer[] = [keep(newRange(newBuffer(8192), 4096, 64))];
      const granule = backend.mapGranularity;
      if (
        granule !== undefined &&
        backend.reserveAddressSpace !== undefined &&
        backend.mapMemory !== undefined
      ) {
        const space = keep(backend.reserveAddressSpace(2 * granule));
        backend.mapMemory(space, granule, granule);
        ranges.push(keep(newRange(space, granule + 256, 64)));
      }
      for (const range of ranges) {
        const other = newBuffer(64);
        stream.write(range, 0, f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]));
        stream.launch(scale, elementsShape(4), [buffer(range, 16), f32(3), u32(4)]);
        stream.copy(other, 0, range, 0, 32);
        stream.launch(add, elementsShape(8), [buffer(range), buffer(range), buffer(other), u32(8)]);
        expect(await readFloats(stream, range, 0, 8)).toEqual([2, 4, 6, 8, 30, 36, 42, 48]);
        expect(await readFloats(stream, other, 0, 8)).toEqual([1, 2, 3, 4, 15, 18, 21, 24]);
      }
    });

    it("runs a stream's pending work when it is released; a released stream refuses every call", async () => {
      const stream = backend.newStream?.() as NativeStream;
      const x = newBuffer(16);
      stream.write(x, 0, f32Bytes([1, 2, 3, 4]));
      stream.launch(scale, elementsShape(4), [buffer(x), f32(4), u32(4)]);
      const read = stream.read(x, 0, 16);
      const event = keep(stream.record());
      stream.release();
      expect(asFloats(await read)).toEqual([4, 8, 12, 16]);
      expect(event.query()).toBe(true);
      await event.done();
      expectError(() => stream.release(), StateError, "ERR_NUVEC_RELEASED");
      expectError(() => stream.write(x, 0, Uint8Array.of(1)), StateError, "ERR_NUVEC_RELEASED");
      expectError(
        () => stream.launch(scale, elementsShape(1), [buffer(x), f32(1), u32(1)]),
        StateError,
        "ERR_NUVEC_RELEASED",
      );
      expectError(() => stream.record(), StateError, "ERR_NUVEC_RELEASED");
      expect(thrown(() => stream.done())).toMatchObject({ code: "ERR_NUVEC_RELEASED" });
      const other = newStream();
      other.wait(event); // an event of a released stream: complete
      expect(asFloats(await other.read(x, 0, 16))).toEqual([4, 8, 12, 16]);
    });

    it("looks kernels up by name: a missing name is a FormatError, a wrong declaration an ArgumentError", () => {
      expect(fill.name).toBe("fill");
      expect([...fill.parameters]).toEqual(["buffer", "f32", "u32"]);
      expect([...add.parameters]).toEqual(["buffer", "buffer", "buffer", "u32"]);
      if (kernels.kernelNames !== undefined)
        expect([...kernels.kernelNames].sort()).toEqual(expect.arrayContaining(["add", "fill", "scale"]));
      expectError(() => kernels.kernel("no_such_kernel"), FormatError, "ERR_NUVEC_KERNEL_NOT_FOUND");
      // A declaration that differs in count or in a parameter's size (CUDA checks the sizes the driver reports).
      expectError(
        () => kernels.kernel("fill", ["buffer", "f64", "u32"]),
        ArgumentError,
        "ERR_NUVEC_INVALID_ARGUMENT",
      );
      expectError(
        () => kernels.kernel("add", ["buffer", "buffer", "u32"]),
        ArgumentError,
        "ERR_NUVEC_INVALID_ARGUMENT",
      );
      const declared = kernels.kernel("scale", ["buffer", "f32", "u32"]);
      expect([...declared.parameters]).toEqual(["buffer", "f32", "u32"]);
    });

    it("refuses a source without an entry for the backend, and one that does not load, with a FormatError", (context) => {
      const none = expectError(() => backend.loadModule?.({}), FormatError, "ERR_NUVEC_MODULE");
      expect(none.message.length).toBeGreaterThan(0);
      if (options.brokenModule === undefined) return context.skip("no broken module for this backend");
      const broken = expectError(
        () => backend.loadModule?.(options.brokenModule as NativeModuleSource),
        FormatError,
        "ERR_NUVEC_MODULE",
      );
      expect(typeof broken.log).toBe("string");
      expect((broken.log as string).length).toBeGreaterThan(0);
      expect(broken.message).toContain(broken.log as string);
    });

    it("refuses kernels of a released module; launches enqueued before the release still run", async () => {
      const stream = newStream();
      const module = keep(
        (backend.loadModule as (source: NativeModuleSource) => NativeModule)(options.kernels),
      );
      const own = module.kernel("scale", STANDARD_KERNEL_PARAMETERS.scale);
      const x = floatsOn(stream, [1, 2]);
      stream.launch(own, elementsShape(2), [buffer(x), f32(5), u32(2)]);
      module.release();
      expectError(() => module.release(), StateError, "ERR_NUVEC_RELEASED");
      expectError(() => module.kernel("scale"), StateError, "ERR_NUVEC_RELEASED");
      const before = backend.counters();
      expectError(
        () => stream.launch(own, elementsShape(2), [buffer(x), f32(5), u32(2)]),
        StateError,
        "ERR_NUVEC_RELEASED",
      );
      expect(backend.counters()).toEqual(before);
      expect(await readFloats(stream, x)).toEqual([5, 10]);
    });

    it("refuses launches whose arguments do not match the kernel, enqueueing nothing", async () => {
      const stream = newStream();
      const x = floatsOn(stream, [1, 2, 3, 4]);
      const gone = backend.newBuffer(16);
      gone.release();
      const before = backend.counters();
      const shape = elementsShape(4);
      const refusals: [() => unknown, NuvecErrorCode][] = [
        [() => stream.launch(scale, shape, [buffer(x), f32(2)]), "ERR_NUVEC_INVALID_ARGUMENT"],
        [
          () => stream.launch(scale, shape, [buffer(x), f32(2), u32(4), u32(4)]),
          "ERR_NUVEC_INVALID_ARGUMENT",
        ],
        [() => stream.launch(scale, shape, [f32(2), buffer(x), u32(4)]), "ERR_NUVEC_INVALID_ARGUMENT"],
        [() => stream.launch(scale, shape, [buffer(x), u32(2), u32(4)]), "ERR_NUVEC_INVALID_ARGUMENT"],
        [() => stream.launch(scale, shape, [buffer(x, 17), f32(2), u32(4)]), "ERR_NUVEC_INVALID_ARGUMENT"],
        [
          () => stream.launch(scale, { ...shape, grid: [0, 1, 1] }, [buffer(x), f32(2), u32(4)]),
          "ERR_NUVEC_INVALID_ARGUMENT",
        ],
        [() => stream.launch(scale, shape, [buffer(gone), f32(2), u32(4)]), "ERR_NUVEC_RELEASED"],
        [
          () =>
            stream.launch({ name: "scale", parameters: scale.parameters }, shape, [
              buffer(x),
              f32(2),
              u32(4),
            ]),
          "ERR_NUVEC_INVALID_ARGUMENT",
        ],
        [() => stream.wait({ stream, query: () => true } as never), "ERR_NUVEC_INVALID_ARGUMENT"],
      ];
      for (const [refused, code] of refusals) {
        const error = thrown(refused);
        expect(error).toBeInstanceOf(NuvecError);
        expect((error as NuvecError).code).toBe(code);
      }
      expect(backend.counters()).toEqual(before);
      expect(await readFloats(stream, x)).toEqual([1, 2, 3, 4]); // none of them ran
    });

    it("settles done() of a stream with nothing enqueued, and keeps counters balanced over many streams", async () => {
      const before: NativeCounters = backend.counters();
      for (let round = 0; round < 20; round += 1) {
        const stream = (backend.newStream as () => NativeStream)();
        await stream.done();
        const x = backend.newBuffer(64);
        stream.launch(fill, elementsShape(16), [buffer(x), f32(round), u32(16)]);
        const read = stream.read(x, 60, 4);
        x.release();
        stream.release();
        expect(asFloats(await read)).toEqual([round]);
      }
      const after = backend.counters();
      expect(after.buffersMade - before.buffersMade).toBe(20);
      expect(after.buffersReleased - before.buffersReleased).toBe(20);
      expect(after.bufferBytes).toBe(before.bufferBytes);
    });
  });
  describeStreamRangeContract(name, open, options);
}
