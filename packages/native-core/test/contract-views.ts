// The contract suite's tests of what reaches a buffer's or mapping's memory from outside the handle: the
// views contents() hands out (detached on release and on detachContents, never reaching the next buffer) and
// the native handles (addresses, checked byte for byte where the process can read its own memory). Apart
// because these are the memory-safety rules of the suite: what a caller still holds after a release.
import { ArgumentError, StateError } from "@nuvec/stats";
import { beforeEach, describe, expect, it } from "vitest";
import type { NativeAllocation, NativeBackend, NativeMemoryHandle } from "../src/index.js";
import { type ContractSuite, expectNativeError } from "./contract-suite.js";
import { patternBytes } from "./support.js";

/** Detaching: views of released buffers and mappings, detachContents. */
export function describeDetaching(suite: ContractSuite): void {
  const { hostVisible, newBuffer, mapFile, writeTemporaryFile, writeBytes, readBytes } = suite;
  describe("detaching", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

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
    ])("a stale view of a released %s buffer never reaches the next buffer of that size", (_label, size) => {
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
    });

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
}

/** Native handles: frozen, distinct, and the memory the views show (host-visible backends). */
export function describeNativeHandles(suite: ContractSuite): void {
  const { hostVisible, options, newBuffer, mapFile, newResidencySet, writeTemporaryFile, expectRefused } =
    suite;
  // CPU addresses: the platforms whose memory the CPU can address (CUDA's device pointers are checked by
  // @nuvec/cuda-native's own tests).
  describe.runIf(hostVisible)("native handles", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

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
}
