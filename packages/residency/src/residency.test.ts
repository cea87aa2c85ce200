import { ArgumentError, type NuvecError, StateError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import { thrown } from "../../stats/test/thrown.js";
import {
  allocation,
  type FakeAllocation,
  FakeBackend,
  type FakeBackendOptions,
} from "../test/fake-backend.js";
import { Residency } from "./residency.js";
import { MAX_RESIDENCY_SETS } from "./set-cap.js";
import type { ResidencySetHandle } from "./types.js";

const GiB = 1024 ** 3;

/** A manager over a fresh fake backend; `cap` set through the test hook when given. */
function make(options: FakeBackendOptions & { cap?: number; wiredLimit?: number } = {}) {
  const backend = new FakeBackend(options);
  const residency = new Residency(backend, { workingSet: 64 * GiB, maxPercentPerSet: null });
  if (options.cap !== undefined) residency.setCap(options.cap);
  if (options.wiredLimit !== undefined) residency.setWiredLimit(options.wiredLimit);
  return { backend, residency };
}

/** Inserts allocations of the given sizes (named a, b, c, …), not mapped. */
function insertAll(residency: Residency<FakeAllocation>, sizes: number[]): FakeAllocation[] {
  return sizes.map((size, index) => {
    const item = allocation(String.fromCharCode(97 + index), size);
    residency.insert(item, false);
    return item;
  });
}

/** Inserts one allocation of `size` (not mapped) and returns the set it went to. */
function placed(residency: Residency<FakeAllocation>, size: number): number | undefined {
  const item = allocation(`#${size}`, size);
  residency.insert(item, false);
  return residency.setIndexOf(item);
}

function snapshot(residency: Residency<FakeAllocation>) {
  return {
    wired: residency.wired,
    wiredMapped: residency.wiredMapped,
    wiredLimit: residency.wiredLimit,
    setCount: residency.setCount,
    setBytes: residency.setBytes(),
    tracked: residency.tracked,
    maxBytesPerSet: residency.maxBytesPerSet,
  };
}

/** `refused` throws an error with `fields`, the manager's figures stay and the backend sees no call. */
function expectRefused(
  { residency, backend }: ReturnType<typeof make>,
  refused: () => unknown,
  fields: Record<string, unknown>,
): unknown {
  const before = snapshot(residency);
  backend.resetCounters();
  const error = thrown(refused);
  expect(error).toMatchObject(fields);
  expect(snapshot(residency)).toEqual(before);
  expect(backend.log).toEqual([]);
  return error;
}

describe("construction", () => {
  it("makes the first set: committed, residency requested, attached, in that order", () => {
    const { backend, residency } = make();
    expect(residency.supported).toBe(true);
    expect(snapshot(residency)).toMatchObject({ setCount: 1, wiredLimit: 0, wired: 0, setBytes: [0] });
    expect(backend.log).toEqual([
      { kind: "create", set: 0 },
      { kind: "commit", set: 0 },
      { kind: "request", set: 0 },
      { kind: "attach", set: 0 },
    ]);
  });

  it.each(BAD_BYTE_COUNTS)("refuses a working set of %s", (_label, workingSet) => {
    const backend = new FakeBackend();
    expect(() => new Residency(backend, { workingSet: workingSet as number })).toThrow(ArgumentError);
    expect(backend.creationAttempts).toBe(0);
  });
});

describe("choose: the seed's choice of set", () => {
  // A cap of 100 bytes: [what it shows, sizes inserted in order, the set of each, the bytes of each set].
  it.each([
    ["takes the first set with room", [60, 60, 40, 30], [0, 1, 0, 1], [100, 90]],
    ["fits exactly at the cap", [100, 1], [0, 1], [100, 1]],
    ["gives an allocation larger than the cap a set of its own", [100, 500, 10], [0, 1, 2], [100, 500, 10]],
    [
      "puts the first allocation larger than the cap in a new set, not in the empty set 0",
      [150],
      [1],
      [0, 150],
    ],
  ])("%s", (_title, sizes, sets, setBytes) => {
    const { residency } = make({ cap: 100, wiredLimit: GiB });
    const items = insertAll(residency, sizes);
    expect(items.map((item) => residency.setIndexOf(item))).toEqual(sets);
    expect(residency.setBytes()).toEqual(setBytes);
  });

  it("reuses the first emptied set after set 0, never set 0 itself", () => {
    const { residency, backend } = make({ cap: 100, wiredLimit: GiB });
    const [a, b] = insertAll(residency, [60, 60, 60]);
    residency.erase(a!);
    residency.erase(b!);
    expect(residency.setBytes()).toEqual([0, 0, 60]);
    expect(placed(residency, 150)).toBe(1); // set 1 was emptied; set 0, empty too, is skipped
    expect(placed(residency, 150)).toBe(3); // no emptied set after 0 remains: a new one
    expect(residency.setBytes()).toEqual([0, 150, 60, 150]);
    expect(backend.creationAttempts).toBe(4);
  });

  it("prefers a set with room over an emptied one", () => {
    const { residency } = make({ cap: 100, wiredLimit: GiB });
    const [, b] = insertAll(residency, [60, 60, 60]);
    residency.erase(b!); // set 1 is emptied, but set 0 still has room for 30
    expect(placed(residency, 30)).toBe(0);
    expect(residency.setBytes()).toEqual([90, 0, 60]);
  });

  it("makes new sets up to 32, then takes the emptiest (the first of equals)", () => {
    const { residency, backend } = make({ cap: 10, wiredLimit: GiB });
    // Sizes 11…41 fit nowhere: each gets a new set, 1 to 31 (set 0 stays empty, never "emptied").
    insertAll(
      residency,
      Array.from({ length: MAX_RESIDENCY_SETS - 1 }, (_, index) => 11 + index),
    );
    expect(residency.setCount).toBe(MAX_RESIDENCY_SETS);
    expect(residency.setBytes()[0]).toBe(0);
    expect(placed(residency, 20)).toBe(0); // the emptiest: set 0, 0 bytes
    expect(placed(residency, 20)).toBe(1); // now set 1 (11 bytes) is the emptiest
    expect(residency.setBytes()[1]).toBe(31);
    expect(placed(residency, 1)).toBe(2); // sets 0 and 2 hold 20 and 12: set 2
    expect(residency.setCount).toBe(MAX_RESIDENCY_SETS);
    expect(backend.creationAttempts).toBe(MAX_RESIDENCY_SETS); // never asked for a 33rd
  });

  it("takes the first of equally empty sets", () => {
    const { residency } = make({ cap: 10, wiredLimit: GiB });
    insertAll(
      residency,
      Array.from({ length: MAX_RESIDENCY_SETS - 1 }, () => 11),
    );
    expect([placed(residency, 11), placed(residency, 11)]).toEqual([0, 0]);
  });

  it("falls back to the emptiest when making a set fails part way, and tries again next time", () => {
    const { residency, backend } = make({
      cap: 10,
      wiredLimit: GiB,
      failCreation: (attempt) => attempt === 3,
    });
    const [a, b, c] = insertAll(residency, [11, 12, 13]);
    expect([a, b, c].map((item) => residency.setIndexOf(item!))).toEqual([1, 2, 0]);
    expect(residency.supported).toBe(true);
    expect(backend.log).toContainEqual({ kind: "createFailed", attempt: 3 });
    expect(placed(residency, 14)).toBe(3); // attempt 4 succeeds
    expect(residency.setBytes()).toEqual([13, 11, 12, 14]);
    expect(backend.sets.every((set) => set.attached)).toBe(true);
  });

  it("keeps using the emptiest while every creation fails", () => {
    const { residency, backend } = make({
      cap: 10,
      wiredLimit: GiB,
      failCreation: (attempt) => attempt >= 1,
    });
    const [a, b, c] = insertAll(residency, [11, 12, 13]);
    expect([a, b, c].map((item) => residency.setIndexOf(item!))).toEqual([0, 0, 0]);
    expect(residency.setCount).toBe(1);
    expect(backend.creationAttempts).toBe(4); // one attempt per placement that found no room
  });

  it("uses one set when the cap is 0", () => {
    const backend = new FakeBackend();
    const residency = new Residency(backend, { workingSet: 64 * GiB, maxPercentPerSet: "100" });
    residency.setWiredLimit(64 * GiB);
    insertAll(residency, [10 * GiB, 20 * GiB, 1]);
    expect(residency.setBytes()).toEqual([30 * GiB + 1]);
    expect(backend.creationAttempts).toBe(1);
  });

  it("puts everything in set 0 once the cap is set to 0, even with other sets made and set 0 over", () => {
    const { residency } = make({ cap: 100, wiredLimit: GiB });
    insertAll(residency, [100, 100]);
    residency.setCap(0);
    expect(placed(residency, 5)).toBe(0);
    expect(residency.setBytes()).toEqual([105, 100]);
  });

  it("applies a new cap to later placements only", () => {
    const { residency } = make({ cap: 100, wiredLimit: GiB });
    insertAll(residency, [90]);
    residency.setCap(50);
    expect(placed(residency, 40)).toBe(1);
    expect(residency.setBytes()).toEqual([90, 40]);
  });
});

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

describe("setWiredLimit", () => {
  it("grows: wires waiting allocations in insertion order, each that still fits", () => {
    const { residency, backend } = make({ cap: 25 });
    const [a, b, c, d] = insertAll(residency, [10, 20, 30, 5]);
    expect(residency.wired).toBe(0);
    backend.resetCounters();
    residency.setWiredLimit(40);
    expect([a, b, c, d].map((item) => residency.isWired(item!))).toEqual([true, true, false, true]);
    expect(residency.wired).toBe(35);
    expect([a, b, d].map((item) => residency.setIndexOf(item!))).toEqual([0, 1, 0]);
    // Set 0 changed: one commit. Set 1 was made by this resize: one commit when made, one for the batch.
    expect(backend.commits()).toEqual([1, 2]);
    expect(backend.requests()).toEqual([0, 1]);
    expect(backend.uncommitted()).toEqual([]);
  });

  it("grows again: the allocation that did not fit joins when it does", () => {
    const { residency, backend } = make();
    const [, , c] = insertAll(residency, [10, 20, 30, 5]);
    residency.setWiredLimit(40);
    backend.resetCounters();
    residency.setWiredLimit(65);
    expect(residency.isWired(c!)).toBe(true);
    expect(residency.wired).toBe(65);
    expect(backend.commits()).toEqual([1]);
  });

  it("shrinks: unwires in insertion order until within the limit, one commit per changed set", () => {
    const { residency, backend } = make({ cap: 30, wiredLimit: 1000 });
    const [a, b, c, d] = insertAll(residency, [10, 20, 30, 5]);
    expect(residency.setBytes()).toEqual([30, 30, 5]);
    backend.resetCounters();
    residency.setWiredLimit(25);
    expect([a, b, c, d].map((item) => residency.isWired(item!))).toEqual([false, false, false, true]);
    expect(snapshot(residency)).toMatchObject({ wired: 5, setBytes: [0, 0, 5] });
    expect(backend.commits()).toEqual([1, 1, 0]);
    expect(backend.requests()).toEqual([0, 0, 0]);
  });

  it("stops unwiring as soon as the total is within the limit", () => {
    const { residency, backend } = make({ wiredLimit: 1000 });
    const [a, b, c] = insertAll(residency, [10, 20, 30]);
    backend.resetCounters();
    residency.setWiredLimit(40);
    expect([a, b, c].map((item) => residency.isWired(item!))).toEqual([false, false, true]);
    expect(residency.wired).toBe(30);
    expect(backend.commits()).toEqual([1]);
  });

  it("does nothing but store the limit when it equals the wired total, or nothing waits", () => {
    const { residency, backend } = make({ wiredLimit: 1000 });
    insertAll(residency, [10, 20]);
    backend.resetCounters();
    residency.setWiredLimit(30);
    residency.setWiredLimit(2000);
    expect(residency.wiredLimit).toBe(2000);
    expect(backend.log).toEqual([]);
  });

  it("keeps wired ≤ wiredLimit after a shrink to 0", () => {
    const { residency, backend } = make({ cap: 15, wiredLimit: 1000 });
    insertAll(residency, [10, 10, 10]);
    residency.setWiredLimit(0);
    expect(residency.wired).toBe(0);
    expect(backend.committedBytes()).toEqual([0, 0, 0]);
  });

  it.each(BAD_BYTE_COUNTS)("refuses a limit of %s, changing nothing", (_label, wiredLimit) => {
    const made = make({ wiredLimit: 100 });
    insertAll(made.residency, [60, 60]);
    expectRefused(made, () => made.residency.setWiredLimit(wiredLimit as number), {
      name: "ArgumentError",
      code: "ERR_NUVEC_INVALID_ARGUMENT",
      argument: "bytes",
    });
  });

  it("accepts -0 as 0", () => {
    const { residency } = make({ wiredLimit: 100 });
    residency.setWiredLimit(-0);
    expect(Object.is(residency.wiredLimit, 0)).toBe(true);
  });
});

describe("wiredMapped", () => {
  it("counts the wired bytes of allocations inserted as mapped", () => {
    const { residency } = make({ wiredLimit: 1000 });
    const mapped = allocation("mapped", 100);
    const plain = allocation("plain", 50);
    residency.insert(mapped, true);
    residency.insert(plain, false);
    expect([residency.wired, residency.wiredMapped]).toEqual([150, 100]);
    residency.setWiredLimit(60); // the mapped one was inserted first: it leaves first
    expect([residency.wired, residency.wiredMapped]).toEqual([50, 0]);
    residency.setWiredLimit(1000);
    expect([residency.wired, residency.wiredMapped]).toEqual([150, 100]);
    residency.erase(mapped);
    expect([residency.wired, residency.wiredMapped]).toEqual([50, 0]);
  });

  it("does not count a mapped allocation while it waits", () => {
    const { residency } = make({ wiredLimit: 10 });
    residency.insert(allocation("mapped", 100), true);
    expect(residency.wiredMapped).toBe(0);
  });
});

describe("refresh", () => {
  it("renews the request of non-empty sets only, without commits", () => {
    const { residency, backend } = make({ cap: 100, wiredLimit: 1000 });
    const [, b] = insertAll(residency, [60, 60, 60]);
    residency.erase(b!);
    backend.resetCounters();
    residency.refresh();
    expect(backend.requests()).toEqual([1, 0, 1]);
    expect(backend.commits()).toEqual([0, 0, 0]);
    residency.refresh();
    expect(backend.requests()).toEqual([2, 0, 2]);
  });

  it("requests nothing when every set is empty", () => {
    const { residency, backend } = make();
    backend.resetCounters();
    residency.refresh();
    expect(backend.log).toEqual([]);
  });
});

describe("setCap", () => {
  it("has no 64 MiB floor, and refuses a bad value", () => {
    const { residency } = make();
    residency.setCap(1);
    expect(residency.maxBytesPerSet).toBe(1);
    residency.setCap(0);
    expect(residency.maxBytesPerSet).toBe(0);
    expect(() => residency.setCap(-1)).toThrow(ArgumentError);
    expect(() => residency.setCap(0.5)).toThrow(ArgumentError);
    expect(residency.maxBytesPerSet).toBe(0);
  });
});

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
