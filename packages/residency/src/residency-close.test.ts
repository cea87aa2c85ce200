/**
 * The manager's two ends: a backend without residency sets (or whose first set cannot be made), and close,
 * after which every call is refused. Apart from the working manager's calls.
 */
import { ArgumentError, type NuvecError, StateError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { allocation, type FakeAllocation, FakeBackend } from "../test/fake-backend.js";
import { GiB, insertAll, make } from "../test/residency-harness.js";
import { Residency } from "./residency.js";
import type { ResidencySetHandle } from "./types.js";

describe("without residency support", () => {
  function check(backend: FakeBackend, residency: Residency<FakeAllocation>) {
    expect(residency.supported).toBe(false);
    expect(residency.setCount).toBe(0);
    const a = allocation("a", 100);
    residency.insert(a, true);
    residency.insert(a, true); // not tracked, so not "twice"
    residency.setWiredLimit(1000);
    expect(residency.wiredLimit).toBe(1000);
    residency.refresh();
    residency.erase(a);
    residency.erase(allocation("never", 1));
    residency.setCap(10);
    expect(residency.has(a)).toBe(false);
    expect(residency.isWired(a)).toBe(false);
    expect([residency.wired, residency.wiredMapped, residency.tracked]).toEqual([0, 0, 0]);
    expect(residency.setBytes()).toEqual([]);
    expect(backend.sizeReads.size).toBe(0);
    expect(() => residency.setWiredLimit(-1)).toThrow(ArgumentError); // a bad argument is still one
    expect(residency.wiredLimit).toBe(1000);
  }

  it("does nothing on a backend without residency sets (and never asks for one)", () => {
    const backend = new FakeBackend({ supportsResidencySets: false });
    const residency = new Residency(backend, { workingSet: 8 * GiB, maxPercentPerSet: null });
    check(backend, residency);
    expect(backend.creationAttempts).toBe(0);
    expect(backend.log).toEqual([]);
  });

  it("does nothing when the first set cannot be made (and never tries again)", () => {
    const backend = new FakeBackend({ failCreation: (attempt) => attempt === 0 });
    const residency = new Residency(backend, { workingSet: 8 * GiB, maxPercentPerSet: null });
    check(backend, residency);
    expect(backend.creationAttempts).toBe(1);
    expect(backend.log).toEqual([{ kind: "createFailed", attempt: 0 }]);
  });
});

describe("close", () => {
  it("unwires everything, commits each changed set once, ends residency and releases every set", () => {
    const { residency, backend } = make({ cap: 100, wiredLimit: 130 });
    insertAll(residency, [60, 60, 60, 10]); // sets [70, 60]; 60 waits
    expect(residency.setBytes()).toEqual([70, 60]);
    backend.resetCounters();
    residency.close();
    expect(backend.commits()).toEqual([1, 1]);
    expect(backend.committedBytes()).toEqual([0, 0]);
    expect(backend.sets.map((set) => [set.ended, set.released])).toEqual([
      [1, true],
      [1, true],
    ]);
    const order = backend.log.filter((event) => "set" in event && event.set === 0).map((event) => event.kind);
    expect(order).toEqual(["remove", "remove", "commit", "end", "release"]);
    expect(residency.closed).toBe(true);
    expect(residency.supported).toBe(false);
    expect([residency.wired, residency.wiredMapped, residency.setCount, residency.tracked]).toEqual([
      0, 0, 0, 0,
    ]);
  });

  it("makes every later call throw a closed error; closing again does nothing", () => {
    const { residency, backend } = make({ wiredLimit: 100 });
    const [a] = insertAll(residency, [10]);
    residency.close();
    backend.resetCounters();
    residency.close();
    const calls: (() => unknown)[] = [
      () => residency.insert(allocation("x", 1), false),
      () => residency.erase(a!),
      () => residency.setWiredLimit(10),
      () => residency.refresh(),
      () => residency.setCap(10),
      () => residency.setBytes(),
      () => residency.isWired(a!),
      () => residency.has(a!),
      () => residency.setIndexOf(a!),
    ];
    for (const call of calls) {
      const error = thrown(call);
      expect(error).toBeInstanceOf(StateError);
      expect((error as NuvecError).code).toBe("ERR_NUVEC_RESIDENCY_CLOSED");
    }
    expect(backend.log).toEqual([]);
  });

  it("works with handles that have neither endResidency nor release", () => {
    const calls: string[] = [];
    const handle: ResidencySetHandle<object> = {
      add: () => calls.push("add"),
      remove: () => calls.push("remove"),
      commit: () => calls.push("commit"),
      requestResidency: () => calls.push("request"),
    };
    const residency = new Residency(
      {
        supportsResidencySets: true,
        newResidencySet: () => handle,
        attachResidencySet: () => calls.push("attach"),
        allocatedSize: () => 8,
      },
      { workingSet: GiB, maxPercentPerSet: null },
    );
    residency.setWiredLimit(100);
    residency.insert({}, false);
    residency.close();
    expect(calls).toEqual(["commit", "request", "attach", "add", "commit", "remove", "commit"]);
  });

  it("closes an unsupported manager", () => {
    const residency = new Residency(new FakeBackend({ supportsResidencySets: false }), { workingSet: 0 });
    residency.close();
    expect(() => residency.setWiredLimit(1)).toThrow(StateError);
  });
});
