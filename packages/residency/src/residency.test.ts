/**
 * The Residency manager from its construction through the choice of set each allocation goes to (the seed's
 * order: room first, then an emptied set, new sets up to the cap, then the emptiest). The other calls are tested
 * beside it: insert and erase, the wired limit, the unsupported backend and close.
 */
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import { FakeBackend } from "../test/fake-backend.js";
import { GiB, insertAll, make, placed, snapshot } from "../test/residency-harness.js";
import { Residency } from "./residency.js";
import { MAX_RESIDENCY_SETS } from "./set-cap.js";

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
