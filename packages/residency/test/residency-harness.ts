/**
 * What the Residency manager's unit tests share: a manager over a fresh fake backend, allocations inserted by
 * size, the manager's figures in one object, and the check that a refusal changes none of them. Apart from the
 * test files so that each of them (the choice of set, insert and erase, the wired limit, close) reads alone.
 */

import { expect } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { Residency } from "../src/residency.js";
import { allocation, type FakeAllocation, FakeBackend, type FakeBackendOptions } from "./fake-backend.js";

/** 1 GiB in bytes. */
export const GiB = 1024 ** 3;

/** A manager over a fresh fake backend; `cap` set through the test hook when given. */
export function make(options: FakeBackendOptions & { cap?: number; wiredLimit?: number } = {}) {
  const backend = new FakeBackend(options);
  const residency = new Residency(backend, { workingSet: 64 * GiB, maxPercentPerSet: null });
  if (options.cap !== undefined) residency.setCap(options.cap);
  if (options.wiredLimit !== undefined) residency.setWiredLimit(options.wiredLimit);
  return { backend, residency };
}

/** Inserts allocations of the given sizes (named a, b, c, …), not mapped. */
export function insertAll(residency: Residency<FakeAllocation>, sizes: number[]): FakeAllocation[] {
  return sizes.map((size, index) => {
    const item = allocation(String.fromCharCode(97 + index), size);
    residency.insert(item, false);
    return item;
  });
}

/** Inserts one allocation of `size` (not mapped) and returns the set it went to. */
export function placed(residency: Residency<FakeAllocation>, size: number): number | undefined {
  const item = allocation(`#${size}`, size);
  residency.insert(item, false);
  return residency.setIndexOf(item);
}

/** The manager's figures, compared before and after a refused call. */
export function snapshot(residency: Residency<FakeAllocation>) {
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
export function expectRefused(
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
