// The mock's call log and its end: every call recorded with its target, argument and outcome, the last
// `callLogLimit` kept, totals that go on; and close() (and Symbol.dispose), which releases everything and
// refuses later calls. Apart from mock.test.ts because these inspect the backend across all its calls rather
// than any one kind of handle.
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { MockBackend, type MockResidencySet } from "../mock.js";

/** Use after release or close. */
const released = expect.objectContaining({ name: "StateError", code: "ERR_NUVEC_RELEASED" });

describe("MockBackend call log", () => {
  it("records every call with its target, argument and outcome", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(300);
    expect(() => mock.newBuffer(-5)).toThrow(ArgumentError);
    buffer.contents();
    expect(() => buffer.write(new Uint8Array(2), 299)).toThrow(ArgumentError);
    buffer.read(0, 300);
    const set = mock.newResidencySet() as MockResidencySet;
    set.add(buffer);
    buffer.release();
    expect(() => buffer.release()).toThrow(released);
    expect(
      mock.calls.map(({ sequence, call, target, argument, outcome, errorCode }) => [
        sequence,
        call,
        target,
        argument,
        outcome,
        errorCode,
      ]),
    ).toEqual([
      [1, "newBuffer", undefined, 300, "ok", undefined],
      [2, "newBuffer", undefined, -5, "rejected", "ERR_NUVEC_INVALID_ARGUMENT"],
      [3, "buffer.contents", "buffer#1", undefined, "ok", undefined],
      [4, "buffer.write", "buffer#1", undefined, "rejected", "ERR_NUVEC_INVALID_ARGUMENT"],
      [5, "buffer.read", "buffer#1", undefined, "ok", undefined],
      [6, "newResidencySet", "set#1", undefined, "ok", undefined],
      [7, "residencySet.add", "set#1", "buffer#1", "ok", undefined],
      [8, "buffer.release", "buffer#1", undefined, "ok", undefined],
      [9, "buffer.release", "buffer#1", undefined, "rejected", "ERR_NUVEC_RELEASED"],
    ]);
  });

  it("keeps the last callLogLimit calls (0 keeps none); clearCalls forgets them; totals and sequence go on", () => {
    const mock = new MockBackend({ callLogLimit: 3 });
    for (let index = 1; index <= 10; index += 1) mock.newBuffer(index);
    expect(mock.calls.map((call) => call.argument)).toEqual([8, 9, 10]);
    mock.clearCalls();
    expect(mock.calls).toEqual([]);
    mock.newBuffer(1);
    expect(mock.calls.map((call) => call.sequence)).toEqual([11]);
    expect(mock.callCounts().newBuffer).toBe(11);
    const silent = new MockBackend({ callLogLimit: 0 });
    silent.newBuffer(1);
    expect(silent.calls).toEqual([]);
    expect(silent.callCounts().newBuffer).toBe(1);
  });
});

describe("MockBackend.close and disposal", () => {
  it("releases every set, mapping and buffer, detaching views; later calls throw StateError", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(100);
    const view = new Uint8Array(buffer.contents());
    mock.addFile("/a", 10);
    const mapping = mock.mapFile("/a");
    const set = mock.newResidencySet() as MockResidencySet;
    set.add(buffer);
    set.commit();
    set.requestResidency();
    mock.close();
    mock.close();
    expect(mock.closed).toBe(true);
    expect([buffer.released, mapping.released, set.released, view.byteLength]).toEqual([true, true, true, 0]);
    expect(mock.counters()).toMatchObject({ bufferBytes: 0, mappedBytes: 0, wiredBytes: 0 });
    for (const call of [() => mock.newBuffer(1), () => mock.mapFile("/a"), () => mock.newResidencySet()]) {
      expect(call).toThrow(released);
    }
  });

  it("Symbol.dispose closes the backend", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(10);
    mock[Symbol.dispose]();
    expect([mock.closed, buffer.released]).toEqual([true, true]);
  });
});
