/**
 * The wired limit and what follows it: setWiredLimit growing and shrinking the wired set, the mapped part of the
 * wired bytes, refresh renewing the requests, and the setCap test hook. Apart from insert and erase, which act
 * on one allocation; these act on all of them.
 */
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import { allocation } from "../test/fake-backend.js";
import { expectRefused, insertAll, make, snapshot } from "../test/residency-harness.js";

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
