// The contract suite's leak check: rounds of making and releasing buffers, mappings and residency sets, after
// which every counter is back where it started, and what the platform itself freed matches. Apart because
// it exercises every other area together, many times over.
import { beforeEach, describe, expect, it } from "vitest";
import type { NativeBackend, NativeCounters } from "../src/index.js";
import type { ContractSuite } from "./contract-suite.js";
import { patternBytes } from "./support.js";

/** No leaks: counters back where they started after `cycles` rounds. */
export function describeNoLeaks(suite: ContractSuite): void {
  const { cycles, writeTemporaryFile, movedSince, writeBytes } = suite;
  describe("no leaks", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

    it(`counters are back where they started after ${cycles} rounds of making and releasing`, () => {
      const page = backend.pageSize;
      const path = writeTemporaryFile(patternBytes(page + 5, 11));
      const before = backend.counters();
      let buffers = 0;
      let mappings = 0;
      for (let round = 0; round < cycles; round += 1) {
        for (const bytes of [100, 4096, page, 3 * page + 1]) {
          const buffer = backend.newBuffer(bytes);
          writeBytes(buffer, Uint8Array.of(round & 0xff), bytes - 1);
          if (round % 2 === 0) buffer.detachContents();
          buffer.release();
          buffers += 1;
        }
        if (round % 10 === 0) {
          const mapping = backend.mapFile(path);
          mapping.contents();
          mappings += 1;
          const set = backend.newResidencySet();
          if (set !== undefined) {
            const buffer = backend.newBuffer(page);
            buffers += 1;
            set.add(buffer);
            set.add(mapping);
            set.commit();
            set.requestResidency();
            set.remove(buffer);
            set.commit();
            set.release();
            buffer.release();
          }
          mapping.release();
        }
      }
      const difference = movedSince(before);
      expect(difference).toMatchObject({
        buffersMade: buffers,
        buffersReleased: buffers,
        mappingsMade: mappings,
        mappingsReleased: mappings,
        bufferBytes: 0,
        mappedBytes: 0,
        wiredBytes: 0,
      });
      // What the platform itself gave back (counted in its free/munmap paths, not at release()): every
      // buffer freed, every mapping unmapped, every set freed. Backends that do not report it skip this.
      const platformFrees = {
        buffersFreedByPlatform: buffers,
        mappingsUnmappedByPlatform: mappings,
        residencySetsFreedByPlatform: difference.residencySetsMade,
      };
      for (const [counter, count] of Object.entries(platformFrees) as [keyof NativeCounters, number][]) {
        if (difference[counter] !== undefined) expect(difference[counter], counter).toBe(count);
      }
    });
  });
}
