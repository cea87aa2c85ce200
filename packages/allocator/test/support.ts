// Helpers for the tests beside the code: where the fixtures are, and a buffer source that can fail.
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { MemoryStats } from "@nuvec/stats";
import { expect } from "vitest";
import type { BufferSource } from "../src/buffer-source.js";
import type { AllocatorCounters } from "../src/counters.js";

/** The repository root (this file is packages/allocator/test/support.ts). */
export const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
/** The repository's copies of the design's traces and conformance scenarios (fixtures/README.md). */
export const fixturesDir = resolve(repoRoot, "fixtures");
export const tracesDir = resolve(fixturesDir, "traces");
export const conformanceFile = resolve(fixturesDir, "conformance/allocator-scenarios.json");

export { thrown } from "../../stats/test/thrown.js";

/** What a refused call throws: an error of class `name` with `code`. */
export const refusal = (name: string, code: string) => expect.objectContaining({ name, code });

/** The figures a refused call must leave as they were. */
export const figures = (allocator: { memoryStats(): MemoryStats; counters(): AllocatorCounters }) => ({
  stats: allocator.memoryStats(),
  counters: allocator.counters(),
});

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

/** A system buffer of the test source: which one, and its length. */
export interface TestBuffer {
  readonly serial: number;
  readonly length: number;
}

/**
 * A pretend device whose buffers are records, with every buffer it made and released, and failures on
 * demand (`failNext` acquisitions fail).
 */
export class TestSource implements BufferSource<TestBuffer> {
  readonly recommendedMaxWorkingSetSize: number;
  readonly memorySize: number;
  readonly maxBufferLength: number;
  readonly resourceLimit: number;
  readonly pageSize: number;
  readonly acquired: TestBuffer[] = [];
  readonly released: TestBuffer[] = [];
  readonly held = new Set<TestBuffer>();
  failNext = 0;
  /** Overrides the allocator's default test of an allocation failure when set. */
  isAllocationFailure?: (error: unknown) => boolean;
  /** When set, `acquire` throws it (not an allocation failure: a closed source, a bug). */
  acquireError: Error | undefined;
  /** When set, `release` throws it after taking the buffer back (the buffer is released all the same). */
  releaseError: ((buffer: TestBuffer) => Error | undefined) | undefined;

  constructor(
    facts: {
      workingSet?: number;
      memorySize?: number;
      maxBufferLength?: number;
      resourceLimit?: number;
      pageSize?: number;
    } = {},
  ) {
    this.recommendedMaxWorkingSetSize = facts.workingSet ?? 1 * GiB;
    this.memorySize = facts.memorySize ?? 2 * this.recommendedMaxWorkingSetSize;
    this.maxBufferLength = facts.maxBufferLength ?? this.recommendedMaxWorkingSetSize;
    this.resourceLimit = facts.resourceLimit ?? 499_000;
    this.pageSize = facts.pageSize ?? 16 * KiB;
  }

  acquire(bytes: number): TestBuffer {
    if (this.acquireError !== undefined) throw this.acquireError;
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error("injected allocation failure"), { code: "ERR_NUVEC_ALLOCATION_FAILED" });
    }
    const buffer = { serial: this.acquired.length, length: bytes };
    this.acquired.push(buffer);
    this.held.add(buffer);
    return buffer;
  }

  release(buffer: TestBuffer): void {
    if (!this.held.delete(buffer)) throw new Error(`buffer ${buffer.serial} released twice or never made`);
    this.released.push(buffer);
    const error = this.releaseError?.(buffer);
    if (error !== undefined) throw error;
  }
}
