// The address-space contract (describeAddressSpaceContract): reserving, mapping and unmapping memory inside
// a reserved range, what the segments policy's expandable segment needs. Apart from the backend contract
// because only some backends have address spaces (the mock with `mapGranularity`, CUDA), and each runs it
// on its own.
import { ArgumentError, StateError } from "@nuvec/stats";
import { beforeEach, describe, expect, it } from "vitest";
import type { NativeBackend } from "../src/index.js";
import { isPowerOfTwo, moved } from "./contract-suite.js";
import { patternBytes, thrown } from "./support.js";

/**
 * The address-space facts of a backend that has them (`mapGranularity`, `reserveAddressSpace`, `mapMemory`,
 * `unmapMemory`: what the segments policy's expandable segment needs), run against every such backend: the
 * mock with `mapGranularity` and CUDA. `hostVisible: false` reads and writes ranges by copy.
 */
export function describeAddressSpaceContract(
  name: string,
  make: () => NativeBackend,
  options: { hostVisible?: boolean } = {},
): void {
  const hostVisible = options.hostVisible ?? true;
  describe(`NativeBackend address spaces: ${name}`, () => {
    let backend: NativeBackend;
    let granule: number;
    beforeEach(() => {
      backend = make();
      granule = backend.mapGranularity as number;
    });

    it("all or none: a granularity (a power of two) with all three calls", () => {
      expect(isPowerOfTwo(granule)).toBe(true);
      for (const call of [backend.reserveAddressSpace, backend.mapMemory, backend.unmapMemory]) {
        expect(typeof call).toBe("function");
      }
    });

    it("a space holds no memory until mapped; a range over mapped memory keeps its bytes; unmapped and released, nothing is left", () => {
      const before = backend.counters();
      const space = backend.reserveAddressSpace!(8 * granule);
      expect([space.length, space.allocatedSize]).toEqual([8 * granule, 0]);
      backend.mapMemory!(space, granule, 2 * granule);
      const range = backend.newBufferRange!(space, granule + 512, granule);
      const bytes = patternBytes(granule, 5);
      if (hostVisible) new Uint8Array(range.contents()).set(bytes);
      else range.write(bytes, 0);
      const back = hostVisible ? new Uint8Array(range.contents()) : range.read(0, granule);
      expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true);
      range.release();
      backend.unmapMemory!(space, granule, 2 * granule);
      space.release();
      expect(moved(before, backend.counters())).toMatchObject({
        buffersMade: 1,
        buffersReleased: 1,
        bufferBytes: 0,
      });
    });

    it("refuses what is not whole granules inside the space, overlaps, an unmap of anything but one mapping, a plain buffer", () => {
      const space = backend.reserveAddressSpace!(4 * granule);
      const plain = backend.newBuffer(granule);
      try {
        for (const [offset, length] of [
          [512, granule],
          [0, granule + 512],
          [0, 5 * granule],
          [0, 0],
          [-granule, granule],
        ] as const) {
          expect(thrown(() => backend.mapMemory!(space, offset, length))).toBeInstanceOf(ArgumentError);
        }
        backend.mapMemory!(space, 0, 2 * granule);
        for (const refused of [
          () => backend.mapMemory!(space, granule, 2 * granule),
          () => backend.unmapMemory!(space, 0, granule),
          () => backend.unmapMemory!(space, 2 * granule, granule),
          () => backend.mapMemory!(plain, 0, granule),
          () => backend.reserveAddressSpace!(granule + 512),
        ]) {
          expect(thrown(refused)).toBeInstanceOf(ArgumentError);
        }
      } finally {
        plain.release();
        // Released with memory still mapped: the space gives it back.
        space.release();
      }
      expect(thrown(() => backend.mapMemory!(space, 0, granule))).toBeInstanceOf(StateError);
      expect(thrown(() => backend.unmapMemory!(space, 0, granule))).toBeInstanceOf(StateError);
    });
  });
}
