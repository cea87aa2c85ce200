import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allocation, type FakeAllocation, FakeBackend } from "../test/fake-backend.js";
import { Residency } from "./residency.js";
import { MAX_RESIDENCY_SETS } from "./set-cap.js";

type Operation =
  | { kind: "insert"; key: number; size: number; mapped: boolean }
  | { kind: "erase"; key: number }
  | { kind: "resize"; wiredLimit: number }
  | { kind: "refresh" }
  | { kind: "setCap"; bytes: number };

const KEYS = 40;

const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("insert" as const),
      key: fc.nat(KEYS - 1),
      size: fc.oneof(fc.constantFrom(0, 1, 10, 25, 50), fc.nat(80)),
      mapped: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("erase" as const), key: fc.nat(KEYS - 1) }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("resize" as const), wiredLimit: fc.nat(1500) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "refresh" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("setCap" as const), bytes: fc.nat(120) }) },
);

describe("Residency under random operations (fast-check)", () => {
  it("keeps its totals, the backend's sets and the commit discipline consistent", () => {
    fc.assert(
      fc.property(
        fc.nat(120),
        fc.boolean(),
        fc.array(operation, { maxLength: 150 }),
        (cap, failSome, operations) => {
          // failSome: every third creation attempt after the first fails.
          const backend = new FakeBackend({
            failCreation: (attempt) => failSome && attempt > 0 && attempt % 3 === 0,
          });
          const residency = new Residency(backend, { workingSet: 0, maxPercentPerSet: null });
          residency.setCap(cap);
          const items = new Map<number, FakeAllocation>();
          const mappedKeys = new Set<number>();

          for (const step of operations) {
            const setsBefore = backend.sets.length;
            const contentsBefore = backend.sets.map((set) => new Set(set.committed));
            const commitsBefore = backend.commits();
            const requestsBefore = backend.requests();
            const bytesBefore = residency.setBytes();

            switch (step.kind) {
              case "insert": {
                if (items.has(step.key)) {
                  expect(() => residency.insert(items.get(step.key)!, step.mapped)).toThrow();
                  break;
                }
                const item = allocation(String(step.key), step.size);
                items.set(step.key, item);
                if (step.mapped) mappedKeys.add(step.key);
                else mappedKeys.delete(step.key);
                residency.insert(item, step.mapped);
                break;
              }
              case "erase": {
                const item = items.get(step.key);
                if (item === undefined) {
                  expect(() => residency.erase(allocation("unknown", 1))).toThrow();
                  break;
                }
                residency.erase(item);
                items.delete(step.key);
                break;
              }
              case "resize":
                residency.setWiredLimit(step.wiredLimit);
                expect(residency.wired).toBeLessThanOrEqual(step.wiredLimit);
                break;
              case "refresh":
                residency.refresh();
                break;
              case "setCap":
                residency.setCap(step.bytes);
                break;
            }

            // wired = the sum of the sizes of the wired allocations; the same for mapped ones.
            let wired = 0;
            let wiredMapped = 0;
            for (const [key, item] of items) {
              if (residency.isWired(item)) {
                wired += item.size;
                if (mappedKeys.has(key)) wiredMapped += item.size;
              }
            }
            expect(residency.wired).toBe(wired);
            expect(residency.wiredMapped).toBe(wiredMapped);
            expect(residency.wired).toBeLessThanOrEqual(residency.wiredLimit);
            expect(residency.tracked).toBe(items.size);

            // The backend holds, committed, exactly what the manager counts in each set.
            expect(backend.uncommitted()).toEqual([]);
            expect(backend.committedBytes()).toEqual(residency.setBytes());
            expect(residency.setCount).toBe(backend.sets.length);
            expect(residency.setCount).toBeLessThanOrEqual(MAX_RESIDENCY_SETS);
            backend.sets.forEach((set, index) => {
              for (const item of set.committed) expect(residency.setIndexOf(item)).toBe(index);
            });
            for (const item of items.values()) {
              const index = residency.setIndexOf(item);
              if (index !== undefined) expect(backend.sets[index]!.committed.has(item)).toBe(true);
            }

            // Every set is attached and was committed and requested once when made; afterwards an
            // operation commits a set once if it changed what the set holds, never otherwise.
            backend.sets.forEach((set, index) => {
              expect(set.attached).toBe(true);
              const created = index >= setsBefore;
              const before = contentsBefore[index] ?? new Set<FakeAllocation>();
              const changed =
                before.size !== set.committed.size || [...before].some((item) => !set.committed.has(item));
              const commits = set.commits - (commitsBefore[index] ?? 0);
              expect(commits).toBe((created ? 1 : 0) + (changed ? 1 : 0));
              // Requests: one when made; refresh renews the sets that held bytes.
              const requests = set.requests - (requestsBefore[index] ?? 0);
              const renewed = step.kind === "refresh" && (bytesBefore[index] ?? 0) !== 0;
              expect(requests).toBe((created ? 1 : 0) + (renewed ? 1 : 0));
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("ends a grow with nothing waiting that would still fit", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ size: fc.nat(100), mapped: fc.boolean() }), { maxLength: 60 }),
        fc.nat(3000),
        (entries, wiredLimit) => {
          const residency = new Residency(new FakeBackend(), { workingSet: 0, maxPercentPerSet: null });
          residency.setCap(150);
          const items = entries.map((entry, index) => {
            const item = allocation(String(index), entry.size);
            residency.insert(item, entry.mapped);
            return item;
          });
          residency.setWiredLimit(wiredLimit);
          const room = wiredLimit - residency.wired;
          for (const item of items) {
            if (!residency.isWired(item)) expect(item.size).toBeGreaterThan(room);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
