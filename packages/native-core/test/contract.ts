// The contract every NativeBackend must keep: the mock (test/contract-mock.test.ts) and the real addon
// (test/contract-host.test.ts, and on macOS the Metal layer) run these same tests. Everything here goes
// through the NativeBackend interface only; what only the mock can do (fault injection) is tested in
// src/mock.test.ts. Counters are compared as differences, so `make` may return the same backend every time.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import type { NuvecErrorCode as NativeErrorCode } from "@nuvec/stats";
import { ArgumentError, NuvecError, StateError, SystemCallError, UnsupportedError } from "@nuvec/stats";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, type TestContext } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import {
  deviceFacts,
  type NativeAllocation,
  type NativeBackend,
  type NativeBuffer,
  type NativeCounters,
  type NativeMappedFile,
  type NativeMemoryHandle,
  type NativeResidencySet,
} from "../src/index.js";
import { patternBytes, thrown } from "./support.js";

/** Options of {@link describeNativeBackendContract}. */
export interface NativeBackendContractOptions {
  /**
   * Whether buffers are real memory of any size: the suite then also writes and reads both ends of a 64 MiB
   * buffer. Default false (the mock gives real memory to small buffers only).
   */
  realMemory?: boolean;
  /**
   * Returns an allocation of `backend` whose wiring will fail (the mock: after `failWiring = true`; the host:
   * a buffer larger than `RLIMIT_MEMLOCK`), or `undefined` when it cannot be arranged here; the suite
   * releases it. Without it the wiring-failure test is skipped.
   */
  failingWiring?: (backend: NativeBackend) => NativeAllocation | undefined;
  /** Rounds of making and releasing in the leak test. Default 100. */
  cycles?: number;
  /**
   * Reads `length` bytes of this process's memory at `address`, not through any view the backend handed out
   * (the host: `/proc/self/mem`). With it the suite checks that a native handle's `address` is the memory
   * `contents()` shows, byte for byte; without it (the mock, whose addresses are synthetic) it checks that
   * the handles are synthetic instead.
   */
  readMemory?: (address: bigint, length: number) => Uint8Array;
  /**
   * This process's memory locked as the kernel counts it (the host: VmLck). With it, every step of the
   * residency tests also checks that the kernel locked exactly the bytes `wiredBytes` says are wired.
   */
  lockedBytes?: () => number;
  /**
   * Whether buffers are host-visible (default true). False (CUDA device memory): the suite reads and writes
   * buffers with `read`/`write` instead of `contents()`, checks that `contents()` is refused, and skips
   * what is about views (none are ever handed out). Mapped files are host-visible on every backend.
   */
  hostVisible?: boolean;
}

/** Anything the suite makes and must release after each test (residency sets have no `released`). */
interface Releasable {
  readonly released?: boolean;
  release(): void;
}

// newBuffer refuses 0 too: a buffer has at least one byte.
const BAD_SIZES: ReadonlyArray<readonly [string, unknown]> = [["0", 0], ["-0", -0], ...BAD_BYTE_COUNTS];

/** What each counter moved by from `before` to `after`; counters a backend does not report are left out. */
function moved(before: NativeCounters, after: NativeCounters): Partial<Record<keyof NativeCounters, number>> {
  const difference: Partial<Record<keyof NativeCounters, number>> = {};
  for (const key of Object.keys(after) as (keyof NativeCounters)[]) {
    const [was, is] = [before[key], after[key]];
    if (typeof was === "number" && typeof is === "number") difference[key] = is - was;
  }
  return difference;
}

function makeDirectory(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

/** Expects `action` to throw a {@link NuvecError} of class `type` with `code`; returns it. */
function expectNativeError<T extends NuvecError>(
  action: () => unknown,
  type: abstract new (...args: never[]) => T,
  code: NativeErrorCode,
): T {
  const error = thrown(action);
  expect(error).toBeInstanceOf(NuvecError);
  expect(error).toBeInstanceOf(type);
  expect((error as NuvecError).code).toBe(code);
  return error as T;
}

function isPowerOfTwo(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0 && (value & (value - 1)) === 0;
}

/**
 * Declares (with vitest `describe`/`it`) the tests every {@link NativeBackend} must pass, under the title
 * `NativeBackend contract: <name>`. `make` is called before each test; it may return a new backend or the
 * same one. The suite wires only a few pages at a time (well under the default `RLIMIT_MEMLOCK`).
 */
export function describeNativeBackendContract(
  name: string,
  make: () => NativeBackend,
  options: NativeBackendContractOptions = {},
): void {
  const cycles = options.cycles ?? 100;
  const hostVisible = options.hostVisible ?? true;

  /** Writes `bytes` at `offset`: through `contents()` where buffers are host-visible, else `write`. */
  function writeBytes(buffer: NativeBuffer, bytes: Uint8Array, offset = 0): void {
    if (hostVisible) {
      new Uint8Array(buffer.contents()).set(bytes, offset);
      return;
    }
    buffer.write(bytes, offset);
  }

  /** Reads `length` bytes from `offset` (a copy where buffers are not host-visible). */
  function readBytes(buffer: NativeBuffer, offset = 0, length = buffer.length - offset): Uint8Array {
    if (hostVisible) return new Uint8Array(buffer.contents(), offset, length);
    return buffer.read(offset, length);
  }

  describe(`NativeBackend contract: ${name}`, () => {
    let backend: NativeBackend;
    let made: Releasable[] = [];
    let sets: NativeResidencySet[] = [];
    let directory: string;

    beforeAll(() => {
      directory = mkdtempSync(join(tmpdir(), "nuvec-native-contract-"));
    });

    afterAll(() => {
      rmSync(directory, { recursive: true, force: true });
    });

    beforeEach(() => {
      backend = make();
      made = [];
      sets = [];
    });

    afterEach(() => {
      // Sets first (they hold allocations), then buffers and mappings, newest first.
      const handles: Releasable[] = [...sets, ...made.reverse()];
      made = [];
      sets = [];
      for (const handle of handles) {
        if (handle.released === true) continue;
        try {
          handle.release();
        } catch (error) {
          if (!(error instanceof StateError && error.code === "ERR_NUVEC_RELEASED")) throw error; // a set the test released already
        }
      }
    });

    function keep<T extends Releasable>(handle: T): T {
      made.push(handle);
      return handle;
    }

    function keepSet(set: NativeResidencySet): NativeResidencySet {
      sets.push(set);
      return set;
    }

    const newBuffer = (bytes: number): NativeBuffer => keep(backend.newBuffer(bytes));
    const mapFile = (path: string): NativeMappedFile => keep(backend.mapFile(path));

    function newResidencySet(context: TestContext): NativeResidencySet {
      if (!backend.supportsResidencySets) context.skip("the backend has no residency sets");
      const set = backend.newResidencySet();
      if (set === undefined) {
        throw new Error("newResidencySet() returned undefined although supportsResidencySets");
      }
      return keepSet(set);
    }

    let fileNumber = 0;
    function writeTemporaryFile(content: Uint8Array): string {
      fileNumber += 1;
      const path = join(directory, `file-${fileNumber}.bin`);
      writeFileSync(path, content);
      return path;
    }

    const wiredBytes = (): number => backend.counters().wiredBytes;
    const movedSince = (before: NativeCounters) => moved(before, backend.counters());

    /** `action` is refused: it throws `type` with `code` (naming `argument` when given) and no counter moves. */
    function expectRefused<T extends NuvecError>(
      action: () => unknown,
      type: abstract new (...args: never[]) => T,
      code: NativeErrorCode,
      argument?: string,
    ): T {
      const before = backend.counters();
      const error = expectNativeError(action, type, code);
      if (argument !== undefined) expect((error as unknown as ArgumentError).argument).toBe(argument);
      expect(backend.counters()).toEqual(before);
      return error;
    }

    // ------------------------------------------------------------------ facts

    describe("device facts", () => {
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

    // ------------------------------------------------------------------ buffers

    describe("buffers", () => {
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
        expectNativeError(
          () => buffer.write("bytes" as never, 0),
          ArgumentError,
          "ERR_NUVEC_INVALID_ARGUMENT",
        );
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

      it.runIf(hostVisible)(
        "contents(length) outside 1..length throws ArgumentError; nothing changes",
        () => {
          const buffer = newBuffer(4096);
          for (const length of [0, -1, 4097, 1.5, Number.NaN, "8" as unknown as number]) {
            expectRefused(() => buffer.contents(length), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT");
          }
          expect(buffer.contents(4096).byteLength).toBe(4096);
        },
      );

      it.runIf(options.realMemory === true)("a 64 MiB buffer is real memory end to end", () => {
        const bytes = 64 * 1024 * 1024;
        const buffer = newBuffer(bytes);
        const ends = [0, bytes / 2, bytes - 1];
        for (const [index, offset] of ends.entries()) writeBytes(buffer, Uint8Array.of(index + 1), offset);
        expect(readBytes(buffer).byteLength).toBe(bytes);
        expect(ends.map((offset) => readBytes(buffer, offset, 1)[0])).toEqual([1, 2, 3]);
      });
    });

    // ------------------------------------------------------------------ detaching

    describe("detaching", () => {
      it.runIf(hostVisible)(
        "release detaches every ArrayBuffer handed out: old views read byteLength 0",
        () => {
          const buffer = newBuffer(1024);
          const memory = buffer.contents();
          const view = new Uint8Array(memory);
          const secondView = new DataView(buffer.contents());
          view.fill(0x5a);
          buffer.release();
          expect([memory.byteLength, view.byteLength, view.length, secondView.buffer.byteLength]).toEqual([
            0, 0, 0, 0,
          ]);
          expect(view[0]).toBeUndefined();
          expect(() => secondView.getUint8(0)).toThrow(TypeError);
        },
      );

      it.runIf(hostVisible).each([
        ["small", () => 256],
        ["one page", (page: number) => page],
        ["several pages", (page: number) => 4 * page],
      ])(
        "a stale view of a released %s buffer never reaches the next buffer of that size",
        (_label, size) => {
          const bytes = size(backend.pageSize);
          for (let round = 0; round < 8; round += 1) {
            const first = newBuffer(bytes);
            const stale = new Uint8Array(first.contents());
            stale.fill(0xa5);
            first.release();
            const next = newBuffer(bytes);
            const view = new Uint8Array(next.contents());
            view.fill(0x11);
            expect(() => stale.fill(0xff)).toThrow(TypeError); // a detached view refuses bulk writes
            stale[0] = 0xff; // and ignores element writes
            stale[bytes - 1] = 0xff;
            expect(stale.byteLength).toBe(0);
            expect(stale[0]).toBeUndefined();
            expect(view.every((byte) => byte === 0x11)).toBe(true);
            next.release();
          }
        },
      );

      it("detachContents detaches old views, keeps the bytes for the next read and changes no counter", () => {
        const buffer = newBuffer(2 * backend.pageSize);
        const pattern = patternBytes(buffer.length, 7);
        const stale = hostVisible ? new Uint8Array(buffer.contents()) : undefined;
        writeBytes(buffer, pattern);
        const before = backend.counters();
        buffer.detachContents();
        if (stale !== undefined) {
          expect(stale.byteLength).toBe(0);
          stale[0] = 0; // a write through the stale view goes nowhere
        }
        expect(buffer.released).toBe(false);
        expect(readBytes(buffer)).toEqual(pattern);
        expect(backend.counters()).toEqual(before);
      });

      it("detachContents before any contents() is harmless", () => {
        const buffer = newBuffer(512);
        buffer.detachContents();
        expect(readBytes(buffer).byteLength).toBe(512);
      });

      it("a mapping's detachContents detaches old views and keeps its bytes for the next contents()", () => {
        const content = patternBytes(300, 8);
        const mapping = mapFile(writeTemporaryFile(content));
        const view = new Uint8Array(mapping.contents());
        mapping.detachContents();
        expect(view.byteLength).toBe(0);
        expect(new Uint8Array(mapping.contents())).toEqual(content);
        mapping.release();
        expectNativeError(() => mapping.detachContents(), StateError, "ERR_NUVEC_RELEASED");
      });

      it("releasing a mapping detaches its views", () => {
        const mapping = mapFile(writeTemporaryFile(patternBytes(3000, 3)));
        const memory = mapping.contents();
        const view = new Uint8Array(memory);
        expect(view[0]).toBe(patternBytes(1, 3)[0]);
        mapping.release();
        expect([mapping.released, memory.byteLength, view.byteLength]).toEqual([true, 0, 0]);
      });
    });

    // ------------------------------------------------------------------ misuse

    describe("misuse is a typed error", () => {
      // [what, the call on a released buffer or mapping]: StateError, and no counter moves.
      it.each<readonly [string, (released: { buffer: NativeBuffer; mapping: NativeMappedFile }) => unknown]>([
        ["a buffer released twice", ({ buffer }) => buffer.release()],
        ["contents() of a released buffer", ({ buffer }) => buffer.contents()],
        ["detachContents() of a released buffer", ({ buffer }) => buffer.detachContents()],
        ["read() of a released buffer", ({ buffer }) => buffer.read(0, 1)],
        ["write() to a released buffer", ({ buffer }) => buffer.write(new Uint8Array(1), 0)],
        ["nativeHandle() of a released buffer", ({ buffer }) => buffer.nativeHandle()],
        ["a mapping released twice", ({ mapping }) => mapping.release()],
        ["contents() of a released mapping", ({ mapping }) => mapping.contents()],
        ["nativeHandle() of a released mapping", ({ mapping }) => mapping.nativeHandle()],
      ])("%s throws StateError and changes no counter", (_label, call) => {
        const buffer = newBuffer(backend.pageSize);
        const mapping = mapFile(writeTemporaryFile(patternBytes(10, 1)));
        buffer.release();
        mapping.release();
        expectRefused(() => call({ buffer, mapping }), StateError, "ERR_NUVEC_RELEASED");
      });

      it.each<readonly [string, unknown]>([...BAD_SIZES, ["maxBufferLength + 1", undefined]])(
        "newBuffer(%s) throws ArgumentError before anything changes",
        (label, bytes) => {
          const length = label === "maxBufferLength + 1" ? backend.maxBufferLength + 1 : bytes;
          expectRefused(
            () => backend.newBuffer(length as number),
            ArgumentError,
            "ERR_NUVEC_INVALID_ARGUMENT",
            "bytes",
          );
        },
      );

      it.each([
        ["a number", 12],
        ["undefined", undefined],
        ["a path with a NUL character", "/tmp/a\0b"],
      ])("mapFile of %s throws ArgumentError before anything changes", (_label, path) => {
        expectRefused(
          () => backend.mapFile(path as string),
          ArgumentError,
          "ERR_NUVEC_INVALID_ARGUMENT",
          "path",
        );
      });
    });

    // ------------------------------------------------------------------ look-alikes

    describe("look-alike handles are ArgumentErrors", () => {
      /** `Object.create` of a real handle's prototype, and a Proxy of the real handle: both pass `instanceof`. */
      const lookAlikes = <T extends object>(real: T): [string, T][] => [
        ["Object.create of its prototype", Object.create(Object.getPrototypeOf(real)) as T],
        ["a Proxy of it", new Proxy(real, {})],
      ];
      /** Each member of an object's interface, called on a given `this` with plausible arguments. */
      type Members = [string, (self: never) => unknown][];
      const bufferMembers: Members = [
        ["contents", (self: NativeBuffer) => self.contents()],
        ["detachContents", (self: NativeBuffer) => self.detachContents()],
        ["read", (self: NativeBuffer) => self.read(0, 1)],
        ["write", (self: NativeBuffer) => self.write(new Uint8Array(1), 0)],
        ["nativeHandle", (self: NativeBuffer) => self.nativeHandle()],
        ["release", (self: NativeBuffer) => self.release()],
        ["released", (self: NativeBuffer) => self.released],
      ];
      const mappingMembers: Members = [
        ["contents", (self: NativeMappedFile) => self.contents()],
        ["detachContents", (self: NativeMappedFile) => self.detachContents()],
        ["nativeHandle", (self: NativeMappedFile) => self.nativeHandle()],
        ["release", (self: NativeMappedFile) => self.release()],
        ["released", (self: NativeMappedFile) => self.released],
      ];
      const setMembers: Members = [
        ["commit", (self: NativeResidencySet) => self.commit()],
        ["requestResidency", (self: NativeResidencySet) => self.requestResidency()],
        ["endResidency", (self: NativeResidencySet) => self.endResidency()],
        ["release", (self: NativeResidencySet) => self.release()],
      ];
      const backendMembers: Members = [
        ["newBuffer", (self: NativeBackend) => self.newBuffer(4096)],
        ["mapFile", (self: NativeBackend) => self.mapFile(join(directory, "any.bin"))],
        ["newResidencySet", (self: NativeBackend) => self.newResidencySet()],
        ["counters", (self: NativeBackend) => self.counters()],
      ];

      /** Every member called on every look-alike of `real`: an ArgumentError naming `this`, no counter moved. */
      function receivers(real: object, members: Members): void {
        for (const [, lookAlike] of lookAlikes(real)) {
          for (const [, call] of members) {
            expectRefused(
              () => call(lookAlike as never),
              ArgumentError,
              "ERR_NUVEC_INVALID_ARGUMENT",
              "this",
            );
          }
        }
      }

      it("as the this of every buffer, mapped file and backend method, and as a buffer or mapping given to one", () => {
        const buffer = newBuffer(2 * backend.pageSize);
        const mapping = mapFile(writeTemporaryFile(patternBytes(10, 3)));
        receivers(buffer, bufferMembers);
        receivers(mapping, mappingMembers);
        receivers(backend, backendMembers);
        for (const [, lookAlike] of lookAlikes(buffer)) {
          if (backend.newBufferRange !== undefined) {
            const range = () => backend.newBufferRange?.(lookAlike, 0, backend.pageSize);
            expectRefused(range, ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT", "segment");
          }
        }
        // The real ones still work: nothing was touched through the look-alikes.
        expect([buffer.released, mapping.released, mapping.contents().byteLength]).toEqual([
          false,
          false,
          10,
        ]);
      });

      it("as the this of every residency set method, and as the allocation or set given to one", (context) => {
        const set = newResidencySet(context);
        const buffer = newBuffer(backend.pageSize);
        receivers(set, setMembers);
        for (const [, lookAlike] of lookAlikes(buffer)) {
          for (const call of [() => set.add(lookAlike), () => set.remove(lookAlike)]) {
            expectRefused(call, ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT", "allocation");
          }
        }
        for (const [, lookAlike] of lookAlikes(set)) {
          expectRefused(
            () => backend.attachResidencySet(lookAlike),
            ArgumentError,
            "ERR_NUVEC_INVALID_ARGUMENT",
            "set",
          );
        }
        set.add(buffer);
        set.commit();
        expect(set.allocationCount).toBe(1);
      });
    });

    // ------------------------------------------------------------------ mapped files

    describe("mapped files", () => {
      it.each([
        ["of two pages and a part", (page: number) => 2 * page + 123],
        ["of exactly one page", (page: number) => page],
      ])(
        "map a file %s without changing it: length, whole pages, bytes byte for byte, counters",
        (_label, size) => {
          const length = size(backend.pageSize);
          const content = patternBytes(length, length);
          const path = writeTemporaryFile(content);
          const before = backend.counters();
          const mapping = mapFile(path);
          const mappedLength = Math.ceil(length / backend.pageSize) * backend.pageSize;
          expect([mapping.path, mapping.length, mapping.mappedLength]).toEqual([path, length, mappedLength]);
          expect([mapping.allocatedSize, mapping.released]).toEqual([mappedLength, false]);
          expect(movedSince(before)).toMatchObject({
            mappingsMade: 1,
            mappedBytes: mappedLength,
            bufferBytes: 0,
          });
          const memory = mapping.contents();
          expect(memory.byteLength).toBe(length);
          expect(new Uint8Array(memory)).toEqual(content);
          mapping.release();
          expect(movedSince(before)).toMatchObject({ mappingsReleased: 1, mappedBytes: 0 });
        },
      );

      it("a file mapped twice at once is counted twice; writes to one mapping reach neither the file nor the other", () => {
        const content = patternBytes(5000, 5);
        const path = writeTemporaryFile(content);
        const before = backend.counters();
        const mapping = mapFile(path);
        new Uint8Array(mapping.contents()).fill(0);
        expect(new Uint8Array(mapping.contents())[100]).toBe(0); // the mapping keeps its own writes
        const other = mapFile(path);
        expect(movedSince(before).mappedBytes).toBe(mapping.mappedLength + other.mappedLength);
        expect(new Uint8Array(other.contents())).toEqual(content);
        mapping.release();
        other.release();
        expect(new Uint8Array(readFileSync(path))).toEqual(content);
      });

      function expectSystemError(path: string, syscall: string, errno: string): void {
        const error = expectRefused(() => backend.mapFile(path), SystemCallError, "ERR_NUVEC_SYSTEM");
        expect({ syscall: error.syscall, errno: error.errno, path: error.path }).toEqual({
          syscall,
          errno,
          path,
        });
        expect(error.errnoNumber).toBe((constants.errno as Record<string, number>)[errno]);
      }

      it.each<readonly [string, string, string, () => string]>([
        ["a missing file", "open", "ENOENT", () => join(directory, "does-not-exist.bin")],
        ["an empty file", "mmap", "EINVAL", () => writeTemporaryFile(new Uint8Array(0))],
        ["a directory", "open", "EISDIR", () => makeDirectory(join(directory, "a-directory"))],
      ])("%s: SystemCallError %s %s with the path", (_label, syscall, errno, makePath) => {
        expectSystemError(makePath(), syscall, errno);
      });

      // sysfs files report a page of length but have no mmap (Linux; the attribute every kernel has).
      it("a file of sysfs: SystemCallError mmap ENODEV with the path", (context) => {
        const path = "/sys/kernel/uevent_seqnum";
        if (!existsSync(path)) context.skip("no sysfs here");
        expectSystemError(path, "mmap", "ENODEV");
      });

      it("an unreadable file: SystemCallError open EACCES with the path", (context) => {
        if (process.getuid?.() === 0) context.skip("root reads any file");
        if (process.platform === "win32") context.skip("no POSIX permissions");
        const path = writeTemporaryFile(patternBytes(10, 2));
        chmodSync(path, 0o000);
        expectSystemError(path, "open", "EACCES");
      });
    });

    // ------------------------------------------------------------------ residency sets

    describe("residency sets", () => {
      /** The set's committed allocations: [allocationCount, allocatedSize]. */
      const holding = (set: NativeResidencySet) => [set.allocationCount, set.allocatedSize];
      /** Where wiring stands now: the counter, and the kernel's figure where the backend gives it. */
      const wiredNow = () => ({ counted: wiredBytes(), locked: options.lockedBytes?.() ?? 0 });
      /** Bytes wired since `start`, by the counter; the kernel's figure must have moved by as much. */
      function wiredSince(start: ReturnType<typeof wiredNow>): number {
        const now = wiredNow();
        if (options.lockedBytes !== undefined) {
          expect(now.locked - start.locked, "bytes the kernel locked").toBe(now.counted - start.counted);
        }
        return now.counted - start.counted;
      }

      it("newResidencySet() gives a set exactly when supportsResidencySets, and counts it", () => {
        const before = backend.counters();
        const set = backend.newResidencySet();
        if (!backend.supportsResidencySets) {
          expect(set).toBeUndefined();
          expect(backend.counters().residencySetsMade).toBe(before.residencySetsMade);
          return;
        }
        expect(set).toBeDefined();
        keepSet(set as NativeResidencySet);
        expect(movedSince(before).residencySetsMade).toBe(1);
        expect([...holding(set as NativeResidencySet), set?.wiringFailures]).toEqual([0, 0, 0]);
      });

      it("add and remove take effect at commit", (context) => {
        const set = newResidencySet(context);
        const first = newBuffer(backend.pageSize);
        const second = newBuffer(2 * backend.pageSize);
        const before = backend.counters();
        set.add(first);
        set.add(second);
        expect(holding(set)).toEqual([0, 0]);
        set.commit();
        expect(movedSince(before).commits).toBe(1);
        expect(holding(set)).toEqual([2, first.allocatedSize + second.allocatedSize]);
        set.remove(first);
        expect(holding(set)).toEqual([2, first.allocatedSize + second.allocatedSize]);
        set.commit();
        expect(holding(set)).toEqual([1, second.allocatedSize]);
      });

      it("nothing is wired before requestResidency, which wires the committed allocations and stands; endResidency unwires all", (context) => {
        const set = newResidencySet(context);
        const first = newBuffer(backend.pageSize);
        const second = newBuffer(2 * backend.pageSize);
        const both = first.allocatedSize + second.allocatedSize;
        const start = wiredNow();
        const before = backend.counters();
        set.add(first);
        set.commit();
        expect(wiredSince(start)).toBe(0); // nothing is wired before requestResidency
        set.requestResidency();
        expect(movedSince(before).residencyRequests).toBe(1);
        expect(wiredSince(start)).toBe(first.allocatedSize);
        set.add(second);
        expect(wiredSince(start)).toBe(first.allocatedSize); // not before the commit
        set.commit();
        expect(wiredSince(start)).toBe(both);
        set.remove(first);
        expect(wiredSince(start)).toBe(both);
        set.commit();
        expect(wiredSince(start)).toBe(second.allocatedSize);
        set.endResidency();
        expect(wiredSince(start)).toBe(0);
        set.add(first);
        set.commit(); // the request no longer stands
        expect([wiredSince(start), set.wiringFailures]).toEqual([0, 0]);
      });

      it("a mapped file in a set is wired by its allocatedSize", (context) => {
        const set = newResidencySet(context);
        const mapping = mapFile(writeTemporaryFile(patternBytes(backend.pageSize + 1, 4)));
        const start = wiredNow();
        set.add(mapping);
        set.commit();
        expect(set.allocatedSize).toBe(mapping.allocatedSize);
        set.requestResidency();
        expect(wiredSince(start)).toBe(mapping.allocatedSize);
        set.endResidency();
        expect(wiredSince(start)).toBe(0);
      });

      it("adding twice is adding once; removing what is not there does nothing", (context) => {
        const set = newResidencySet(context);
        const buffer = newBuffer(backend.pageSize);
        set.add(buffer);
        set.add(buffer);
        set.remove(newBuffer(backend.pageSize));
        set.commit();
        expect(holding(set)).toEqual([1, buffer.allocatedSize]);
        const start = wiredNow();
        set.requestResidency();
        set.requestResidency();
        expect(wiredSince(start)).toBe(buffer.allocatedSize);
        set.endResidency();
        set.endResidency();
        expect(wiredSince(start)).toBe(0);
      });

      it("attachResidencySet accepts a live set; releasing it unwires everything; any later call throws StateError", (context) => {
        const set = newResidencySet(context);
        const buffer = newBuffer(backend.pageSize);
        const start = wiredNow();
        set.add(buffer);
        set.commit();
        set.requestResidency();
        expect(wiredSince(start)).toBe(buffer.allocatedSize);
        expect(() => backend.attachResidencySet(set)).not.toThrow();
        set.release();
        expect(wiredSince(start)).toBe(0);
        for (const call of [
          () => set.add(buffer),
          () => set.remove(buffer),
          () => set.commit(),
          () => set.requestResidency(),
          () => set.endResidency(),
          () => set.release(),
          () => backend.attachResidencySet(set),
        ]) {
          expectNativeError(call, StateError, "ERR_NUVEC_RELEASED");
        }
        expect(wiredSince(start)).toBe(0);
      });

      it("adding a released buffer throws StateError", (context) => {
        const set = newResidencySet(context);
        const buffer = newBuffer(backend.pageSize);
        buffer.release();
        expectNativeError(() => set.add(buffer), StateError, "ERR_NUVEC_RELEASED");
        set.commit();
        expect(set.allocationCount).toBe(0);
      });

      // Metal's rule, which the host and the mock follow: a set keeps what it holds until the removal commits.
      it.runIf(hostVisible)(
        "a set holds a buffer released while in it, wired, until its removal is committed",
        (context) => {
          const set = newResidencySet(context);
          const buffer = backend.newBuffer(backend.pageSize);
          const start = wiredNow();
          set.add(buffer);
          set.commit();
          set.requestResidency();
          buffer.release();
          expectNativeError(() => buffer.contents(), StateError, "ERR_NUVEC_RELEASED");
          expect([wiredSince(start), set.allocationCount]).toEqual([buffer.allocatedSize, 1]);
          set.remove(buffer);
          set.commit();
          expect([wiredSince(start), set.allocationCount]).toEqual([0, 0]);
        },
      );

      it("a wiring failure is counted on the set and in the counters, never thrown", (context) => {
        if (options.failingWiring === undefined) context.skip("no way to make wiring fail on this backend");
        const set = newResidencySet(context);
        const allocation = options.failingWiring?.(backend);
        if (allocation === undefined) context.skip("wiring cannot be made to fail here");
        keep(allocation as NativeAllocation);
        const before = backend.counters();
        set.add(allocation as NativeAllocation);
        set.commit();
        expect(() => set.requestResidency()).not.toThrow();
        expect(set.wiringFailures).toBeGreaterThanOrEqual(1);
        expect(movedSince(before).wiringFailures).toBeGreaterThanOrEqual(1);
        expect(movedSince(before).wiredBytes).toBe(0);
        expect(() => set.endResidency()).not.toThrow();
        expect(() => set.release()).not.toThrow();
        expect(movedSince(before).wiredBytes).toBe(0);
      });
    });

    // ------------------------------------------------------------------ native handles

    // CPU addresses: the platforms whose memory the CPU can address (CUDA's device pointers are checked by
    // @nuvec/cuda-native's own tests).
    describe.runIf(hostVisible)("native handles", () => {
      const addressOf = (handle: NativeMemoryHandle): bigint => {
        if (handle.platform === "cuda") throw new Error("a CUDA handle has no CPU address");
        return handle.address;
      };
      // The top 16 bits of a canonical x86-64 or arm64 address are all 0 (user) or all 1 (kernel).
      const isCanonical = (pointer: bigint) => [0n, 0xffffn].includes(pointer >> 48n);

      it("a buffer's handle is frozen, names the backend's platform, and is the same on every call", () => {
        const buffer = newBuffer(1000);
        const handle = buffer.nativeHandle();
        expect(Object.isFrozen(handle)).toBe(true);
        expect(handle.platform).toBe(backend.platform);
        expect(typeof addressOf(handle)).toBe("bigint");
        expect(addressOf(handle)).toBeGreaterThan(0n);
        expect(buffer.nativeHandle()).toEqual(handle);
        if (handle.platform === "metal" || handle.platform === "mock") {
          expect([typeof handle.metalBuffer, typeof handle.gpuAddress]).toEqual(["bigint", "bigint"]);
          expect(handle.metalBuffer).not.toBe(0n);
        } else {
          expect(Object.keys(handle).sort()).toEqual(["address", "platform"]);
        }
      });

      it("live allocations have distinct addresses that do not overlap", () => {
        const page = backend.pageSize;
        const allocations = [100, 100, page, 3 * page].map((bytes) => newBuffer(bytes) as NativeAllocation);
        allocations.push(mapFile(writeTemporaryFile(patternBytes(page + 1, 3))));
        const sorted = allocations
          .map((allocation) => ({ start: addressOf(allocation.nativeHandle()), length: allocation.length }))
          .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
        for (const [index, { start }] of sorted.entries()) {
          const previous = sorted[index - 1];
          if (previous !== undefined)
            expect(start).toBeGreaterThanOrEqual(previous.start + BigInt(previous.length));
        }
      });

      const readMemory = options.readMemory;
      if (readMemory !== undefined) {
        it("a buffer's address is the memory contents() shows (read around every view)", () => {
          for (const bytes of [200, 3 * backend.pageSize + 7]) {
            const buffer = newBuffer(bytes);
            const pattern = patternBytes(bytes, bytes);
            new Uint8Array(buffer.contents()).set(pattern);
            expect(readMemory(addressOf(buffer.nativeHandle()), bytes)).toEqual(pattern);
          }
        });

        it("a mapped file's address is the file's bytes, and a write through contents() shows there", () => {
          const content = patternBytes(2 * backend.pageSize + 33, 21);
          const mapping = mapFile(writeTemporaryFile(content));
          const address = addressOf(mapping.nativeHandle());
          expect(address % BigInt(backend.pageSize)).toBe(0n);
          expect(readMemory(address, content.length)).toEqual(content);
          new Uint8Array(mapping.contents())[5] = (content[5] as number) ^ 0xff;
          expect(readMemory(address + 5n, 1)[0]).toBe((content[5] as number) ^ 0xff);
        });
      } else {
        it("the mock's handles are synthetic: distinct, and never canonical addresses", (context) => {
          if (backend.platform !== "mock") context.skip("a real backend; no way to read its memory here");
          const handles = [
            newBuffer(64).nativeHandle(),
            mapFile(writeTemporaryFile(patternBytes(10, 5))).nativeHandle(),
          ];
          expect(handles.map((handle) => handle.platform)).toEqual(["mock", "mock"]);
          const pointers = handles.flatMap((handle) =>
            handle.platform === "mock" ? [handle.address, handle.metalBuffer, handle.gpuAddress] : [],
          );
          expect(pointers.filter(isCanonical)).toEqual([]);
          expect(new Set(pointers).size).toBe(6);
        });
      }

      it("attachResidencySet with a command queue is refused unless the backend is Metal", (context) => {
        const set = newResidencySet(context);
        if (backend.platform === "metal") context.skip("Metal accepts a queue (never run here)");
        expectRefused(
          () => backend.attachResidencySet(set, 0x1000n),
          ArgumentError,
          "ERR_NUVEC_INVALID_ARGUMENT",
          "commandQueue",
        );
        expect(set.metalResidencySet).toBeUndefined();
      });
    });

    // ------------------------------------------------------------------ buffer ranges

    describe("buffer ranges (newBufferRange)", () => {
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

    // ------------------------------------------------------------------ leaks

    describe("no leaks", () => {
      it(`counters are back where they started after ${cycles} rounds of making and releasing`, () => {
        const page = backend.pageSize;
        const path = writeTemporaryFile(patternBytes(page + 5, 11));
        const before = backend.counters();
        let buffers = 0;
        let mappings = 0;
        for (let round = 0; round < cycles; round += 1) {
          for (const bytes of [100, 4096, page, 3 * page + 1]) {
            const buffer = backend.newBuffer(bytes);
            writeBytes(buffer, Uint8Array.of(round & 0xff), bytes - 1);
            if (round % 2 === 0) buffer.detachContents();
            buffer.release();
            buffers += 1;
          }
          if (round % 10 === 0) {
            const mapping = backend.mapFile(path);
            mapping.contents();
            mappings += 1;
            const set = backend.newResidencySet();
            if (set !== undefined) {
              const buffer = backend.newBuffer(page);
              buffers += 1;
              set.add(buffer);
              set.add(mapping);
              set.commit();
              set.requestResidency();
              set.remove(buffer);
              set.commit();
              set.release();
              buffer.release();
            }
            mapping.release();
          }
        }
        const difference = movedSince(before);
        expect(difference).toMatchObject({
          buffersMade: buffers,
          buffersReleased: buffers,
          mappingsMade: mappings,
          mappingsReleased: mappings,
          bufferBytes: 0,
          mappedBytes: 0,
          wiredBytes: 0,
        });
        // What the platform itself gave back (counted in its free/munmap paths, not at release()): every
        // buffer freed, every mapping unmapped, every set freed. Backends that do not report it skip this.
        const platformFrees = {
          buffersFreedByPlatform: buffers,
          mappingsUnmappedByPlatform: mappings,
          residencySetsFreedByPlatform: difference.residencySetsMade,
        };
        for (const [counter, count] of Object.entries(platformFrees) as [keyof NativeCounters, number][]) {
          if (difference[counter] !== undefined) expect(difference[counter], counter).toBe(count);
        }
      });
    });
  });
}

/**
 * The address-space facts of a backend that has them (`mapGranularity`, `reserveAddressSpace`, `mapMemory`,
 * `unmapMemory`: what the segments policy's expandable segment needs), run against every such backend: the
 * mock with `mapGranularity` and CUDA. `hostVisible: false` reads and writes ranges by copy.
 */
export function describeAddressSpaceContract(
  name: string,
  make: () => NativeBackend,
  options: { hostVisible?: boolean } = {},
): void {
  const hostVisible = options.hostVisible ?? true;
  describe(`NativeBackend address spaces: ${name}`, () => {
    let backend: NativeBackend;
    let granule: number;
    beforeEach(() => {
      backend = make();
      granule = backend.mapGranularity as number;
    });

    it("all or none: a granularity (a power of two) with all three calls", () => {
      expect(isPowerOfTwo(granule)).toBe(true);
      for (const call of [backend.reserveAddressSpace, backend.mapMemory, backend.unmapMemory]) {
        expect(typeof call).toBe("function");
      }
    });

    it("a space holds no memory until mapped; a range over mapped memory keeps its bytes; unmapped and released, nothing is left", () => {
      const before = backend.counters();
      const space = backend.reserveAddressSpace!(8 * granule);
      expect([space.length, space.allocatedSize]).toEqual([8 * granule, 0]);
      backend.mapMemory!(space, granule, 2 * granule);
      const range = backend.newBufferRange!(space, granule + 512, granule);
      const bytes = patternBytes(granule, 5);
      if (hostVisible) new Uint8Array(range.contents()).set(bytes);
      else range.write(bytes, 0);
      const back = hostVisible ? new Uint8Array(range.contents()) : range.read(0, granule);
      expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true);
      range.release();
      backend.unmapMemory!(space, granule, 2 * granule);
      space.release();
      expect(moved(before, backend.counters())).toMatchObject({
        buffersMade: 1,
        buffersReleased: 1,
        bufferBytes: 0,
      });
    });

    it("refuses what is not whole granules inside the space, overlaps, an unmap of anything but one mapping, a plain buffer", () => {
      const space = backend.reserveAddressSpace!(4 * granule);
      const plain = backend.newBuffer(granule);
      try {
        for (const [offset, length] of [
          [512, granule],
          [0, granule + 512],
          [0, 5 * granule],
          [0, 0],
          [-granule, granule],
        ] as const) {
          expect(thrown(() => backend.mapMemory!(space, offset, length))).toBeInstanceOf(ArgumentError);
        }
        backend.mapMemory!(space, 0, 2 * granule);
        for (const refused of [
          () => backend.mapMemory!(space, granule, 2 * granule),
          () => backend.unmapMemory!(space, 0, granule),
          () => backend.unmapMemory!(space, 2 * granule, granule),
          () => backend.mapMemory!(plain, 0, granule),
          () => backend.reserveAddressSpace!(granule + 512),
        ]) {
          expect(thrown(refused)).toBeInstanceOf(ArgumentError);
        }
      } finally {
        plain.release();
        // Released with memory still mapped: the space gives it back.
        space.release();
      }
      expect(thrown(() => backend.mapMemory!(space, 0, granule))).toBeInstanceOf(StateError);
      expect(thrown(() => backend.unmapMemory!(space, 0, granule))).toBeInstanceOf(StateError);
    });
  });
}

export { describeStreamContract, type StreamContractOptions } from "./stream-contract.js";
export {
  describeStreamFailureContract,
  type StreamFailureContractOptions,
} from "./stream-contract-failures.js";
export {
  CUDA_BROKEN_MODULE,
  CUDA_STANDARD_KERNELS,
  MOCK_STANDARD_KERNELS,
  STANDARD_KERNEL_PARAMETERS,
} from "./stream-contract-kernels.js";
export { elementsShape } from "./stream-contract-support.js";
