// The contract suite's tests of the device and its buffers: the device facts, buffers (lengths, counters,
// contents, read and write) and buffer ranges (newBufferRange). Apart from the views, mapped files and
// residency sets because these are what any backend must get right first: memory of the length asked for,
// counted, holding its bytes.
import { ArgumentError, StateError, UnsupportedError } from "@nuvec/stats";
import { beforeEach, describe, expect, it, type TestContext } from "vitest";
import { deviceFacts, type NativeBackend, type NativeBuffer, type NativeMemoryHandle } from "../src/index.js";
import { type ContractSuite, expectNativeError, isPowerOfTwo } from "./contract-suite.js";
import { patternBytes } from "./support.js";

/** The device facts: sane, unchanging, and counters() a copy. */
export function describeDeviceFacts(suite: ContractSuite): void {
  const { hostVisible, newBuffer } = suite;
  describe("device facts", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

    it("are sane: a name, a platform, a power-of-two page, working set and max buffer within memory", () => {
      expect(typeof backend.name).toBe("string");
      expect(backend.name.length).toBeGreaterThan(0);
      expect(["metal", "host", "mock", "cuda"]).toContain(backend.platform);
      expect(backend.hostVisible ?? true).toBe(hostVisible);
      expect(isPowerOfTwo(backend.pageSize)).toBe(true);
      expect(backend.pageSize).toBeGreaterThanOrEqual(4096);
      for (const fact of [
        "memorySize",
        "recommendedMaxWorkingSetSize",
        "maxBufferLength",
        "resourceLimit",
      ] as const) {
        expect(Number.isSafeInteger(backend[fact]), fact).toBe(true);
        expect(backend[fact], fact).toBeGreaterThan(0);
      }
      expect(backend.recommendedMaxWorkingSetSize).toBeLessThanOrEqual(backend.memorySize);
      expect(backend.maxBufferLength).toBeLessThanOrEqual(backend.memorySize);
      expect(typeof backend.supportsResidencySets).toBe("boolean");
    });

    it("do not change between reads", () => {
      const first = deviceFacts(backend);
      newBuffer(backend.pageSize).release();
      expect(deviceFacts(backend)).toEqual(first);
    });

    it("counters() returns a copy", () => {
      const counters = backend.counters();
      const before = { ...counters };
      counters.buffersMade += 1000;
      counters.wiredBytes += 1000;
      expect(backend.counters()).toEqual(before);
    });
  });
}

/** Buffers: lengths and allocated sizes, counters, contents, read and write. */
export function describeBuffers(suite: ContractSuite): void {
  const { hostVisible, options, newBuffer, movedSince, expectRefused, writeBytes, readBytes } = suite;
  describe("buffers", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

    it("have the length asked for and an allocatedSize of at least that, whole pages from a page on", () => {
      const page = backend.pageSize;
      for (const bytes of [1, 255, 256, 1000, page - 1, page, page + 1, 3 * page, 3 * page + 17]) {
        const buffer = newBuffer(bytes);
        expect([buffer.length, buffer.released]).toEqual([bytes, false]);
        expect(Number.isSafeInteger(buffer.allocatedSize)).toBe(true);
        expect(buffer.allocatedSize).toBeGreaterThanOrEqual(bytes);
        if (bytes > page) {
          expect(buffer.allocatedSize % page, `allocatedSize of ${bytes}`).toBe(0);
          expect(buffer.allocatedSize).toBeLessThan(bytes + page);
        }
      }
    });

    it("are counted when made and when released", () => {
      const before = backend.counters();
      const buffer = newBuffer(2 * backend.pageSize + 1);
      const bytes = buffer.allocatedSize;
      expect(movedSince(before)).toMatchObject({ buffersMade: 1, buffersReleased: 0, bufferBytes: bytes });
      buffer.release();
      expect(buffer.released).toBe(true);
      expect(movedSince(before)).toMatchObject({ buffersMade: 1, buffersReleased: 1, bufferBytes: 0 });
    });

    it.each([
      ["small", () => 300],
      ["one page", (page: number) => page],
      ["several pages", (page: number) => 5 * page + 7],
    ])("contents of a %s buffer: length bytes, written and read back", (_label, size) => {
      const bytes = size(backend.pageSize);
      const buffer = newBuffer(bytes);
      if (hostVisible) {
        const memory = buffer.contents();
        expect(memory).toBeInstanceOf(ArrayBuffer);
        expect(memory.byteLength).toBe(bytes);
      }
      const pattern = patternBytes(bytes, bytes);
      writeBytes(buffer, pattern);
      expect(readBytes(buffer)).toEqual(pattern);
    });

    it("read and write copy exactly the span asked for and refuse any other", () => {
      const buffer = newBuffer(3 * 1024);
      const pattern = patternBytes(buffer.length, 11);
      writeBytes(buffer, pattern);
      buffer.write(new Uint16Array([0x0201, 0x0403]), 1000);
      pattern.set([1, 2, 3, 4], 1000);
      const copy = buffer.read(998, 8);
      const next = buffer.read(0, 8); // small reads share no memory with each other
      expect(copy).toEqual(pattern.slice(998, 1006));
      expect(next).toEqual(pattern.slice(0, 8));
      expect(buffer.read(100, 2000)).toEqual(pattern.slice(100, 2100));
      copy.fill(0); // a copy: the buffer keeps its bytes
      expect(readBytes(buffer)).toEqual(pattern);
      if (hostVisible) {
        // A write whose source is a view of the same memory, overlapping its target: as a memmove.
        buffer.write(new Uint8Array(buffer.contents(), 0, 2000), 8);
        pattern.copyWithin(8, 0, 2000);
        expect(readBytes(buffer)).toEqual(pattern);
      }
      const before = backend.counters();
      expectNativeError(() => buffer.read(buffer.length, 1), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expectNativeError(() => buffer.read(-1, 1), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expectNativeError(
        () => buffer.write(new Uint8Array(2), buffer.length - 1),
        ArgumentError,
        "ERR_NUVEC_INVALID_ARGUMENT",
      );
      expectNativeError(() => buffer.write("bytes" as never, 0), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      expect(backend.counters()).toEqual(before);
      expect(readBytes(buffer)).toEqual(pattern);
    });

    it.runIf(!hostVisible)(
      "contents() of memory that is not host-visible is refused; nothing changes",
      () => {
        const buffer = newBuffer(backend.pageSize);
        expectRefused(() => buffer.contents(), UnsupportedError, "ERR_NUVEC_NOT_HOST_VISIBLE");
        expect(buffer.released).toBe(false);
      },
    );

    it.runIf(hostVisible)(
      "contents() called twice, and contents(length), give views of the same memory: exactly length bytes, the same view for the same length",
      () => {
        const buffer = newBuffer(96 * 1024);
        const whole = new Uint8Array(buffer.contents());
        whole[0] = 0x21;
        whole[80 * 1024 - 1] = 0x43;
        whole[96 * 1024 - 1] = 0x34;
        expect(new Uint8Array(buffer.contents())[96 * 1024 - 1]).toBe(0x34);
        const part = buffer.contents(80 * 1024);
        expect(part.byteLength).toBe(80 * 1024);
        expect(buffer.contents(80 * 1024)).toBe(part);
        const bytes = new Uint8Array(part);
        expect([bytes[0], bytes[80 * 1024 - 1]]).toEqual([0x21, 0x43]);
        bytes[1] = 0x65;
        expect(new Uint8Array(buffer.contents())[1]).toBe(0x65);
        expect(buffer.contents(96 * 1024).byteLength).toBe(96 * 1024);
        buffer.detachContents();
        expect(part.byteLength).toBe(0);
      },
    );

    it.runIf(hostVisible)("contents(length) outside 1..length throws ArgumentError; nothing changes", () => {
      const buffer = newBuffer(4096);
      for (const length of [0, -1, 4097, 1.5, Number.NaN, "8" as unknown as number]) {
        expectRefused(() => buffer.contents(length), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      }
      expect(buffer.contents(4096).byteLength).toBe(4096);
    });

    it.runIf(options.realMemory === true)("a 64 MiB buffer is real memory end to end", () => {
      const bytes = 64 * 1024 * 1024;
      const buffer = newBuffer(bytes);
      const ends = [0, bytes / 2, bytes - 1];
      for (const [index, offset] of ends.entries()) writeBytes(buffer, Uint8Array.of(index + 1), offset);
      expect(readBytes(buffer).byteLength).toBe(bytes);
      expect(ends.map((offset) => readBytes(buffer, offset, 1)[0])).toEqual([1, 2, 3]);
    });
  });
}

/** Buffer ranges (newBufferRange): part of a segment, with its own handle and views. */
export function describeBufferRanges(suite: ContractSuite): void {
  const { hostVisible, keep, newBuffer, movedSince, expectRefused, writeBytes, readBytes } = suite;
  describe("buffer ranges (newBufferRange)", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

    const pointerOf = (handle: NativeMemoryHandle): bigint =>
      handle.platform === "cuda" ? (handle.devicePointer as bigint) : handle.address;
    /** The backend's newBufferRange; skips the test where it makes no ranges. */
    function ranges(context: TestContext) {
      if (backend.newBufferRange === undefined) context.skip("the backend makes no ranges");
      return backend.newBufferRange?.bind(backend) as NonNullable<NativeBackend["newBufferRange"]>;
    }
    const kept =
      (make: ReturnType<typeof ranges>) => (segment: NativeBuffer, offset: number, length: number) =>
        keep(make(segment, offset, length));

    it("a range is its length of the segment: its handle is the segment's moved by the offset", (context) => {
      const newRange = kept(ranges(context));
      const segment = newBuffer(64 * 1024);
      const range = newRange(segment, 4096, 1536);
      expect([range.length, range.allocatedSize, range.released]).toEqual([1536, 1536, false]);
      const handle = range.nativeHandle();
      expect(Object.isFrozen(handle)).toBe(true);
      expect(handle.platform).toBe(backend.platform);
      expect(pointerOf(handle) - pointerOf(segment.nativeHandle())).toBe(4096n);
      if (handle.platform === "metal" || handle.platform === "mock") {
        expect(handle.metalBuffer).toBe((segment.nativeHandle() as typeof handle).metalBuffer);
        expect(handle.offset).toBe(4096);
      }
    });

    it("bytes written through a range read back through it, and through the segment at the offset", (context) => {
      const newRange = kept(ranges(context));
      const segment = newBuffer(64 * 1024);
      const first = newRange(segment, 0, 2048);
      const second = newRange(segment, 2048, 2048);
      const pattern = patternBytes(2048, 5);
      writeBytes(second, pattern);
      writeBytes(first, Uint8Array.of(9), 2047);
      expect(readBytes(second)).toEqual(pattern);
      expect(readBytes(first, 2047, 1)[0]).toBe(9);
      first.write(Uint8Array.of(7), 1); // read and write of a range: at the range's offsets, as any buffer's
      expect([...second.read(2040, 8), readBytes(first, 1, 1)[0]]).toEqual([...pattern.slice(2040), 7]);
      // The mock's ranges have bytes of their own (JavaScript cannot alias part of an ArrayBuffer).
      if (backend.platform !== "mock") {
        expect(readBytes(segment, 2048, 2048)).toEqual(pattern);
        expect(readBytes(segment, 2047, 1)[0]).toBe(9);
      }
      if (hostVisible) expect(second.contents().byteLength).toBe(2048);
      else expectNativeError(() => second.contents(), UnsupportedError, "ERR_NUVEC_NOT_HOST_VISIBLE");
    });

    it("a segment released while a range lives keeps its memory until the range is released", (context) => {
      const newRange = ranges(context);
      const before = backend.counters();
      const segment = backend.newBuffer(32 * 1024);
      const range = newRange(segment, 8192, 4096);
      segment.release();
      expect(segment.released).toBe(true);
      expect(movedSince(before)).toMatchObject({ buffersReleased: 0, bufferBytes: segment.allocatedSize });
      const pattern = patternBytes(4096, 8);
      writeBytes(range, pattern);
      expect(readBytes(range)).toEqual(pattern);
      range.release();
      expect(range.released).toBe(true);
      expect(movedSince(before)).toMatchObject({ buffersReleased: 1, bufferBytes: 0 });
    });

    it("a range's views are its own: detaching them leaves the segment's and other ranges' alone", (context) => {
      const newRange = kept(ranges(context));
      if (!hostVisible) context.skip("no views of device memory");
      const segment = newBuffer(64 * 1024);
      const first = newRange(segment, 0, 4096);
      const second = newRange(segment, 4096, 4096);
      const views = [segment.contents(), first.contents(), second.contents()];
      const lengths = () => views.map((view) => view.byteLength);
      first.detachContents();
      expect(lengths()).toEqual([64 * 1024, 0, 4096]);
      expect(first.contents().byteLength).toBe(4096);
      second.release();
      expect(lengths()).toEqual([64 * 1024, 0, 0]);
    });

    it("misuse is a typed error: outside the segment, a released segment, a range of a range, twice released", (context) => {
      const newRange = ranges(context);
      const segment = newBuffer(8192);
      for (const [offset, length] of [
        [-1, 10],
        [0, 0],
        [8192, 1],
        [4096, 4097],
        [1.5, 10],
        [0, Number.NaN],
      ] as const) {
        expectRefused(() => newRange(segment, offset, length), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      }
      const range = keep(newRange(segment, 0, 4096));
      expectRefused(() => newRange(range, 0, 512), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
      const released = backend.newBuffer(4096);
      released.release();
      expectRefused(() => newRange(released, 0, 512), StateError, "ERR_NUVEC_RELEASED");
      const once = keep(newRange(segment, 4096, 4096));
      once.release();
      expectRefused(() => once.release(), StateError, "ERR_NUVEC_RELEASED");
      expectRefused(() => once.nativeHandle(), StateError, "ERR_NUVEC_RELEASED");
    });
  });
}
