// The mock's residency sets beyond the contract: per-set call counts and state, per-set accounting of wired
// bytes, refusals of foreign allocations, attachments, and the residency faults (`residencySetLimit`,
// `failWiring`, `clearFaults`). Apart from mock.test.ts because residency is the mock's own state machine,
// over the buffers and files the other tests make.
import type { NativeBackend } from "@nuvec/native-core";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { MockBackend, type MockBuffer, MockResidencySet } from "../mock.js";

describe("MockResidencySet", () => {
  it("counts every call per set; the backend's counters sum commits and requests over sets", () => {
    const mock = new MockBackend();
    const first = mock.newResidencySet() as MockResidencySet;
    const second = mock.newResidencySet() as MockResidencySet;
    const buffer = mock.newBuffer(16_384);
    first.add(buffer);
    first.add(buffer);
    first.commit();
    first.requestResidency();
    first.remove(buffer);
    first.commit();
    first.endResidency();
    second.commit();
    second.requestResidency();
    second.requestResidency();
    expect(first.calls).toEqual({ adds: 2, removes: 1, commits: 2, residencyRequests: 1, residencyEnds: 1 });
    expect(second.calls).toEqual({ adds: 0, removes: 0, commits: 1, residencyRequests: 2, residencyEnds: 0 });
    const counters = mock.counters();
    expect([counters.commits, counters.residencyRequests, counters.residencySetsMade]).toEqual([3, 3, 2]);
    expect(mock.callCounts()["residencySet.add"]).toBe(2);
  });

  it("shows its state: wired bytes, request, pending changes, committed allocations", () => {
    const mock = new MockBackend();
    const set = mock.newResidencySet() as MockResidencySet;
    const buffer = mock.newBuffer(40_000);
    set.add(buffer);
    expect(set.hasUncommittedChanges).toBe(true);
    set.commit();
    expect(set.hasUncommittedChanges).toBe(false);
    expect(set.committedAllocations()).toEqual([buffer]);
    expect([set.residencyRequested, set.isWired(buffer), set.wiredBytes]).toEqual([false, false, 0]);
    set.requestResidency();
    expect([set.residencyRequested, set.isWired(buffer), set.wiredBytes]).toEqual([true, true, 49_152]);
    set.endResidency();
    expect([set.residencyRequested, set.isWired(buffer), set.wiredBytes]).toEqual([false, false, 0]);
  });

  it("two sets wiring one buffer each count it (per-set accounting, as the host layer's mlock)", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(16_384);
    for (const set of [mock.newResidencySet(), mock.newResidencySet()] as MockResidencySet[]) {
      set.add(buffer);
      set.commit();
      set.requestResidency();
    }
    expect(mock.counters().wiredBytes).toBe(2 * 16_384);
  });

  it("refuses allocations of another backend or anything else with ArgumentError", () => {
    const mock = new MockBackend();
    const other = new MockBackend();
    const set = mock.newResidencySet() as MockResidencySet;
    expect(() => set.add(other.newBuffer(10))).toThrow(ArgumentError);
    expect(() => set.remove(other.newBuffer(10))).toThrow(ArgumentError);
    expect(() => set.add({ length: 1, allocatedSize: 1 } as unknown as MockBuffer)).toThrow(ArgumentError);
    expect(() => mock.attachResidencySet(other.newResidencySet() as MockResidencySet)).toThrow(ArgumentError);
  });

  it("records attachments", () => {
    const mock = new MockBackend();
    const attached = mock.newResidencySet() as MockResidencySet;
    const alone = mock.newResidencySet() as MockResidencySet;
    mock.attachResidencySet(attached);
    mock.attachResidencySet(attached);
    expect([attached.attachments, alone.attachments]).toEqual([2, 0]);
    expect(mock.attachedResidencySets).toEqual([attached]);
    expect(mock.liveResidencySets).toEqual([attached, alone]);
    attached.release();
    expect(attached.attachments).toBe(2);
    expect(mock.attachedResidencySets).toEqual([]);
  });
});

describe("MockBackend fault injection: residency", () => {
  it("residencySetLimit = n: the first n sets are made, later ones are undefined", () => {
    const mock = new MockBackend();
    mock.residencySetLimit = 2;
    const sets = [1, 2, 3, 4].map(() => mock.newResidencySet());
    expect(sets.map((set) => set !== undefined)).toEqual([true, true, false, false]);
    expect(mock.counters().residencySetsMade).toBe(2);
    expect(mock.calls.map((call) => call.outcome)).toEqual(["ok", "ok", "failed", "failed"]);
    mock.residencySetLimit = undefined;
    expect(mock.newResidencySet()).toBeInstanceOf(MockResidencySet);
    // As an option; and a backend without residency sets makes none.
    expect(new MockBackend({ residencySetLimit: 0 }).newResidencySet()).toBeUndefined();
    const without = new MockBackend({ supportsResidencySets: false });
    expect([without.newResidencySet(), without.counters().residencySetsMade]).toEqual([undefined, 0]);
  });

  it("failWiring: true counts a failure per allocation, wires nothing, never throws; a later request retries", () => {
    const mock = new MockBackend({ failWiring: true });
    const set = mock.newResidencySet() as MockResidencySet;
    const buffers = [mock.newBuffer(16_384), mock.newBuffer(32_768)];
    for (const buffer of buffers) set.add(buffer);
    set.commit();
    const backend: NativeBackend = mock;
    expect(backend.lastWiringError).toBeUndefined();
    expect(() => set.requestResidency()).not.toThrow();
    expect(set.wiringFailures).toBe(2);
    expect(backend.lastWiringError).toMatch(/wiring \d+ bytes failed/);
    expect(mock.counters()).toMatchObject({ wiringFailures: 2, wiredBytes: 0 });
    mock.failWiring = false;
    set.requestResidency();
    expect(mock.counters()).toMatchObject({ wiringFailures: 2, wiredBytes: 49_152 });
  });

  it("a failWiring predicate fails some allocations, including ones added under a standing request", () => {
    const mock = new MockBackend();
    const set = mock.newResidencySet() as MockResidencySet;
    const good = mock.newBuffer(16_384);
    const bad = mock.newBuffer(16_384);
    mock.failWiring = (allocation) => allocation === bad;
    set.add(good);
    set.commit();
    set.requestResidency();
    set.add(bad);
    set.commit();
    expect([set.isWired(good), set.isWired(bad), set.wiringFailures, set.wiredBytes]).toEqual([
      true,
      false,
      1,
      16_384,
    ]);
  });

  it("clearFaults lifts every fault", () => {
    const mock = new MockBackend({
      failAllocation: () => true,
      failMapping: () => true,
      residencySetLimit: 0,
      failWiring: true,
    });
    mock.clearFaults();
    mock.addFile("/a", 1);
    const buffer = mock.newBuffer(16_384);
    mock.mapFile("/a");
    const set = mock.newResidencySet() as MockResidencySet;
    set.add(buffer);
    set.commit();
    set.requestResidency();
    expect(mock.counters()).toMatchObject({ wiringFailures: 0, wiredBytes: 16_384 });
  });
});
