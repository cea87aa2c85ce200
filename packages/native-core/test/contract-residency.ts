// The contract suite's tests of residency sets: add and remove take effect at commit, what is wired follows
// requestResidency and endResidency (checked against the kernel's locked bytes where the backend gives
// them), a released set or buffer, and wiring failures counted, never thrown. Apart because residency is its
// own state machine over the allocations the other areas make.
import { StateError } from "@nuvec/stats";
import { beforeEach, describe, expect, it } from "vitest";
import type { NativeAllocation, NativeBackend, NativeResidencySet } from "../src/index.js";
import { type ContractSuite, expectNativeError } from "./contract-suite.js";
import { patternBytes } from "./support.js";

/** Residency sets: commits, wiring, release, and wiring failures. */
export function describeResidencySets(suite: ContractSuite): void {
  const {
    hostVisible,
    options,
    keep,
    keepSet,
    newBuffer,
    mapFile,
    newResidencySet,
    writeTemporaryFile,
    wiredBytes,
    movedSince,
  } = suite;
  describe("residency sets", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

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
}
