/**
 * Residency.insert and Residency.erase: what each wires, leaves waiting or commits, and the refusals of an
 * allocation inserted twice or never inserted. Apart from the choice of set, which decides only where an
 * allocation goes.
 */
import { StateError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import { allocation } from "../test/fake-backend.js";
import { expectRefused, GiB, insertAll, make, snapshot } from "../test/residency-harness.js";

describe("insert", () => {
  it("wires while wired + size ≤ wiredLimit, and commits the set once", () => {
    const { residency, backend } = make({ wiredLimit: 100 });
    backend.resetCounters();
    const [a, b] = insertAll(residency, [60, 40]);
    expect(residency.wired).toBe(100);
    expect(residency.isWired(a!) && residency.isWired(b!)).toBe(true);
    expect(backend.commits()).toEqual([2]);
    expect(backend.sets[0]!.committed).toEqual(new Set([a, b]));
  });

  it("leaves an allocation past the limit waiting (tracked, not wired, nothing committed); a smaller one after it gets in", () => {
    const { residency, backend } = make({ wiredLimit: 100 });
    const [, big, small] = insertAll(residency, [60, 50, 40]);
    expect([residency.isWired(big!), residency.isWired(small!)]).toEqual([false, true]);
    backend.resetCounters();
    const c = allocation("c", 1);
    residency.insert(c, false);
    expect([residency.has(c), residency.isWired(c), residency.setIndexOf(c)]).toEqual([
      true,
      false,
      undefined,
    ]);
    expect(snapshot(residency)).toMatchObject({ wired: 100, tracked: 4 });
    expect(backend.log).toEqual([]);
  });

  it("wires nothing under the default limit of 0, except empty allocations (0 + 0 ≤ 0, as the seed)", () => {
    const { residency, backend } = make();
    const [a, empty] = insertAll(residency, [1, 0]);
    expect(residency.isWired(a!)).toBe(false);
    expect(residency.isWired(empty!)).toBe(true);
    expect(residency.wired).toBe(0);
    expect(backend.sets[0]!.committed.has(empty!)).toBe(true);
  });

  it("commits a set made for the insert twice: once when made, once for the insert", () => {
    const { residency, backend } = make({ cap: 10, wiredLimit: GiB });
    backend.resetCounters();
    insertAll(residency, [20]);
    expect(backend.commits()).toEqual([0, 2]);
    expect(backend.requests()).toEqual([0, 1]);
    expect(backend.log).toEqual([
      { kind: "create", set: 1 },
      { kind: "commit", set: 1 },
      { kind: "request", set: 1 },
      { kind: "attach", set: 1 },
      { kind: "add", set: 1, allocation: "a" },
      { kind: "commit", set: 1 },
    ]);
  });

  it("reads the size once; the totals use the recorded size", () => {
    const { residency, backend } = make({ wiredLimit: 1000 });
    const [a] = insertAll(residency, [100]);
    a!.size = 999; // what a buggy backend might report later: never read again
    residency.setWiredLimit(50);
    residency.setWiredLimit(1000);
    residency.refresh();
    expect(residency.wired).toBe(100);
    residency.erase(a!);
    expect(snapshot(residency)).toMatchObject({ wired: 0, setBytes: [0] });
    expect(backend.sizeReads.get(a!)).toBe(1);
  });

  it("refuses an allocation inserted twice, changing nothing", () => {
    const made = make({ wiredLimit: 1000 });
    const [a] = insertAll(made.residency, [100]);
    const error = expectRefused(made, () => made.residency.insert(a!, true), {
      name: "StateError",
      code: "ERR_NUVEC_RESIDENCY_ALREADY_TRACKED",
    });
    expect(error).toBeInstanceOf(StateError);
    expect(made.backend.sizeReads.get(a!)).toBe(1);
  });

  it.each(BAD_BYTE_COUNTS)("refuses a size of %s from the backend, changing nothing", (_label, size) => {
    const made = make({ wiredLimit: 1000 });
    insertAll(made.residency, [100]);
    const bad = allocation("bad", size as number);
    expectRefused(made, () => made.residency.insert(bad, false), {
      name: "ArgumentError",
      argument: "allocatedSize",
    });
    expect(made.residency.has(bad)).toBe(false);
  });

  it("accepts -0 as 0", () => {
    const { residency } = make({ wiredLimit: 10 });
    const [a] = insertAll(residency, [-0]);
    expect(Object.is(residency.wired, 0)).toBe(true);
    expect(residency.isWired(a!)).toBe(true);
  });

  it("keys allocations by identity", () => {
    const { residency } = make({ wiredLimit: 1000 });
    const a = allocation("same", 10);
    const twin = allocation("same", 10);
    residency.insert(a, false);
    residency.insert(twin, false);
    expect(residency.wired).toBe(20);
    residency.erase(twin);
    expect(residency.has(a)).toBe(true);
    expect(residency.has(twin)).toBe(false);
  });
});

describe("erase", () => {
  it("unwires a wired allocation and commits its set once", () => {
    const { residency, backend } = make({ cap: 100, wiredLimit: 1000 });
    const [a, b] = insertAll(residency, [60, 60]);
    backend.resetCounters();
    residency.erase(b!);
    expect(backend.commits()).toEqual([0, 1]);
    expect(backend.sets[1]!.committed.size).toBe(0);
    expect(snapshot(residency)).toMatchObject({ setBytes: [60, 0], wired: 60 });
    expect(residency.has(b!)).toBe(false);
    expect(residency.setCount).toBe(2); // emptied sets are kept
    expect(residency.isWired(a!)).toBe(true);
  });

  it("forgets a waiting allocation without a commit", () => {
    const { residency, backend } = make({ wiredLimit: 10 });
    const [, waiting] = insertAll(residency, [10, 5]);
    backend.resetCounters();
    residency.erase(waiting!);
    expect(backend.log).toEqual([]);
    expect(residency.tracked).toBe(1);
  });

  it("refuses an allocation never inserted, or erased already, changing nothing", () => {
    const made = make({ wiredLimit: 1000 });
    const [a] = insertAll(made.residency, [100]);
    made.residency.erase(a!);
    for (const item of [a!, allocation("stranger", 1)]) {
      const error = expectRefused(made, () => made.residency.erase(item), {
        code: "ERR_NUVEC_RESIDENCY_NOT_TRACKED",
      });
      expect(error).toBeInstanceOf(StateError);
    }
  });

  it("lets an erased allocation be inserted again, at the end of the insertion order", () => {
    const { residency } = make({ wiredLimit: 1000 });
    const [a, b] = insertAll(residency, [10, 20]);
    residency.erase(a!);
    residency.insert(a!, false);
    residency.setWiredLimit(15); // shrink: unwire in insertion order, b first now
    expect(residency.isWired(b!)).toBe(false);
    expect(residency.isWired(a!)).toBe(true);
    expect(residency.wired).toBe(10);
  });
});
