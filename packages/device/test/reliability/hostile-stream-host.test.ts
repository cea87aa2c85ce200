// Hostile uses of the Device's streams on the real host backend, each in a child process (a crash shows as
// the child's signal): a buffer's view moved away while stream work naming it is queued, two Devices whose
// streams name each other's buffers, and a worker terminated while its Device's streams have work queued.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { childUnavailableReason, runChild } from "./support.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const skipReason = childUnavailableReason();
const scratch = scratchFolder("nuvec-hostile-stream-host-");
const SIZE = 64 * 1024;

/** metal-native's standard stream kernels (fill, scale, add, sleep, fail) as a shared library. */
function kernelsLibrary(): string {
  const output = join(scratch.folder, "stream_kernels.so");
  const source = join(here, "../../../metal-native/test/native/stream_kernels.c");
  const build = spawnSync(process.env.CC ?? "cc", ["-shared", "-fPIC", "-O2", "-o", output, source], {
    encoding: "utf8",
  });
  if (build.status !== 0) throw new Error(`cc failed: ${build.stderr}`);
  return output;
}

describe.skipIf(skipReason !== undefined)(
  `hostile stream use on the host backend${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    const library = skipReason === undefined ? kernelsLibrary() : "";

    it("a view moved away (transfer(), a worker) while a launch, write, copy or read names the buffer: the work reaches only the quarantined memory, freed once both are done", () => {
      const { status, signal, stderr, report } = runChild("hostile-stream-transfer.mjs", {
        args: [library],
        nodeOptions: ["--harmony-rab-gsab-transfer", "--expose-gc"],
      });
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      // Differences from the figures before each probe. The buffer is quarantined at its free (never cached:
      // the next malloc of its size makes a new buffer), stays so while the work is queued, and is given back
      // to the system once the work ran and the moved view is gone, whichever comes last.
      const quarantined = { quarantined: SIZE, quarantinedAllocations: 1, buffersMade: 1 };
      const next = { active: SIZE, buffersMade: 2 };
      const freed = { ...next, buffersFreedByPlatform: 1 };
      const kept = {
        afterFree: quarantined,
        whileQueued: quarantined,
        afterWork: { ...next, quarantined: SIZE, quarantinedAllocations: 1 },
        end: freed,
        nextUntouched: true,
      };
      const collected = {
        afterFree: quarantined,
        whileQueued: quarantined,
        afterWork: freed,
        end: freed,
        nextUntouched: true,
      };
      const source = [0x33, 0x33, 0x33, 0x33];
      const old = [0x11, 0x11, 0x11, 0x11];
      expect(report).toEqual({
        // The fill's 2.0 (0x40000000) lands in the moved view, the write's 0x44, the copy's source bytes.
        "launch/kept": { ...kept, movedHead: [0, 0, 0, 0x40], sourceHead: source },
        "launch/collected": { ...collected, sourceHead: source },
        "write/kept": { ...kept, movedHead: [0x44, 0x44, 0x44, 0x44], sourceHead: source },
        "write/collected": { ...collected, sourceHead: source },
        "copy-into/kept": { ...kept, movedHead: source, sourceHead: source },
        "copy-into/collected": { ...collected, sourceHead: source },
        // Copied out of, and read from, the old memory: its bytes, not the next owner's 0x55.
        "copy-from/kept": { ...kept, movedHead: old, sourceHead: old },
        "copy-from/collected": { ...collected, sourceHead: old },
        "read/kept": { ...kept, movedHead: old, readBytes: old, sourceHead: source },
        "read/collected": { ...collected, readBytes: old, sourceHead: source },
        postMessage: {
          // Node refuses to transfer the backend's memory itself: the view stays attached.
          refusal: { name: "TypeError", message: "Found invalid object in transferList" },
          stillAttached: SIZE,
          viewLengthAfterTransfer: 0,
          seenByWorker: SIZE,
          movedLength: 0,
          // The worker's view is the old memory: the queued fill landed there.
          workerHeadAfterWork: [0, 0, 0, 0x40],
          afterFree: quarantined,
          afterWork: { ...next, quarantined: SIZE, quarantinedAllocations: 1 },
          end: freed,
          nextUntouched: true,
        },
        closed: { quarantinedAllocations: 0, liveBuffers: 0, bufferBytes: 0 },
      });
    });
  },
);
