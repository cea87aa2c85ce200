// The contract suite's tests of refusals: a released handle used again, bad sizes and paths, and look-alike
// handles (Object.create of a real prototype, a Proxy) given as `this` or as an argument. Apart from the
// areas whose calls they refuse because each refusal is the same rule everywhere: a typed error, and no
// counter moves.
import { join } from "node:path";
import { ArgumentError, StateError } from "@nuvec/stats";
import { beforeEach, describe, expect, it } from "vitest";
import type { NativeBackend, NativeBuffer, NativeMappedFile, NativeResidencySet } from "../src/index.js";
import { BAD_SIZES, type ContractSuite } from "./contract-suite.js";
import { patternBytes } from "./support.js";

/** Misuse: calls on released handles, bad byte counts and paths, each a typed error. */
export function describeMisuse(suite: ContractSuite): void {
  const { newBuffer, mapFile, writeTemporaryFile, expectRefused } = suite;
  describe("misuse is a typed error", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

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
}

/** Look-alike handles: an ArgumentError naming `this`, the argument or the set. */
export function describeLookAlikes(suite: ContractSuite): void {
  const { newBuffer, mapFile, newResidencySet, writeTemporaryFile, expectRefused } = suite;
  describe("look-alike handles are ArgumentErrors", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

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
      ["mapFile", (self: NativeBackend) => self.mapFile(join(suite.directory, "any.bin"))],
      ["newResidencySet", (self: NativeBackend) => self.newResidencySet()],
      ["counters", (self: NativeBackend) => self.counters()],
    ];

    /** Every member called on every look-alike of `real`: an ArgumentError naming `this`, no counter moved. */
    function receivers(real: object, members: Members): void {
      for (const [, lookAlike] of lookAlikes(real)) {
        for (const [, call] of members) {
          expectRefused(() => call(lookAlike as never), ArgumentError, "ERR_NUVEC_INVALID_ARGUMENT", "this");
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
      expect([buffer.released, mapping.released, mapping.contents().byteLength]).toEqual([false, false, 10]);
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
}
