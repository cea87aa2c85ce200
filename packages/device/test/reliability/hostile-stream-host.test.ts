// Hostile uses of the Device's streams on the real host backend, each in a child process (a crash shows as
// the child's signal): a buffer's view moved away while stream work naming it is queued, two Devices whose
// streams name each other's buffers, and a worker terminated while its Device's streams have work queued.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../../stats/test/thrown.js";
import { Device } from "../../src/index.js";
import { childUnavailableReason, foreignHandle as foreign, runChild } from "./support.js";

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

    it("two Devices with streams: a stream of one naming the other's buffer, mapped file, kernel or event is refused, nothing changed; closing one while both streams run", async () => {
      const one = Device.open({ safetyNet: false });
      const two = Device.open({ safetyNet: false });
      const [s, t] = [one.newStream(), two.newStream()];
      const [mine, theirs] = [one.loadModule({ host: library }), two.loadModule({ host: library })];
      const a = one.malloc(256);
      const b = two.malloc(256);
      const file = two.mapFile(scratch.write("two.bin", new Uint8Array(4096).fill(9)));
      const shape = { grid: [1], block: [64] };
      const fill = mine.kernel("fill");
      const state = () => ({
        one: { stats: one.memoryStats(), counters: one.counters() },
        two: { stats: two.memoryStats(), counters: two.counters() },
        positions: [s.position, t.position],
      });
      const before = state();
      const attempts: [() => unknown, object][] = [
        [() => s.launch(fill, shape, [b, { f32: 1 }, { u32: 64 }]), foreign("launch()")],
        [
          () => s.launch(fill, shape, [{ buffer: b, offset: 4 }, { f32: 1 }, { u32: 1 }]),
          foreign("launch()"),
        ],
        [() => s.launch(fill, shape, [file, { f32: 1 }, { u32: 1 }]), foreign("launch()")],
        [() => s.write(b, new Uint8Array(4)), foreign("write()")],
        [() => s.read(b), foreign("read()")],
        [() => s.read(file), foreign("read()")],
        [() => s.copy(b, a), foreign("copy()")],
        [() => s.copy(a, b), foreign("copy()")],
        [() => s.copy(a, file, { length: 256 }), foreign("copy()")],
        [
          () => s.launch(theirs.kernel("fill"), shape, [a, { f32: 1 }, { u32: 64 }]),
          {
            name: "ArgumentError",
            code: "ERR_NUVEC_INVALID_ARGUMENT",
            argument: "kernel",
            message: "launch(): the kernel belongs to another device",
          },
        ],
      ];
      for (const [attempt, refusal] of attempts) expect(thrown(attempt)).toMatchObject(refusal);
      const event = t.record();
      const afterRecord = state();
      expect(thrown(() => s.wait(event))).toMatchObject({
        name: "ArgumentError",
        code: "ERR_NUVEC_INVALID_ARGUMENT",
        argument: "event",
        message: "wait(): the event belongs to another device",
      });
      expect(state()).toEqual(afterRecord);
      event.release();
      expect(afterRecord.positions).toEqual([0, 0]);
      expect(afterRecord.one).toEqual(before.one);
      expect(before.one.counters.backend).toEqual(before.two.counters.backend); // one backend per process

      // Both streams run 400 ms of sleep and a fill; the second Device closes under them.
      const sleep = { grid: [1], block: [1] };
      s.launch(mine.kernel("sleep"), sleep, [{ u32: 400 }]);
      s.launch(fill, shape, [a, { f32: 3 }, { u32: 64 }]);
      const mineRead = s.read(a, 0, 8);
      t.launch(theirs.kernel("sleep"), sleep, [{ u32: 400 }]);
      t.launch(theirs.kernel("fill"), shape, [b, { f32: 5 }, { u32: 64 }]);
      const theirRead = t.read(b, 0, 8).catch((error: unknown) => error);
      two.close();
      const closed = { name: "StateError", code: "ERR_NUVEC_DEVICE_CLOSED" };
      expect(await theirRead).toMatchObject({
        ...closed,
        message: "the stream's work: the device is closed",
      });
      expect([...new Float32Array((await mineRead).buffer)]).toEqual([3, 3]);
      // Its buffer stays another Device's; its kernels are of a closed one.
      expect(thrown(() => s.write(b, new Uint8Array(4)))).toMatchObject(foreign("write()"));
      expect(thrown(() => s.launch(theirs.kernel("fill"), shape, [a, { f32: 1 }, { u32: 1 }]))).toMatchObject(
        {
          ...closed,
          message: "kernel(): the device is closed",
        },
      );
      const backend = one.counters().backend;
      expect(backend.buffersMade - backend.buffersReleased).toBe(
        before.one.counters.backend.buffersMade - before.one.counters.backend.buffersReleased - 1,
      );
      expect(backend.mappedBytes).toBe(before.one.counters.backend.mappedBytes - 4096);
      expect(one.memoryStats()).toEqual({ ...before.one.stats, peakActive: 256, peakActiveWithMapped: 256 });
      expect(s.position).toBe(3);
      a.free();
      one.close();
      const end = one.counters().backend;
      expect(end.buffersMade - end.buffersReleased).toBe(
        before.one.counters.backend.buffersMade - before.one.counters.backend.buffersReleased - 2,
      );
      expect(end.bufferBytes).toBe(before.one.counters.backend.bufferBytes - 512);
    });

    it("workers terminated with stream work queued and running on their Device (20 workers): the process lives, nothing they held stays, the main thread's Device keeps working", () => {
      const { status, signal, stderr, report } = runChild("hostile-stream-terminate.mjs", {
        args: [library, "20"],
        timeout: 120_000,
      });
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      const result = report as {
        rssGrowthKiB: number;
        maps: { before: number; after: number };
        fds: { before: number; after: number };
        threads: { before: number; after: number };
      };
      expect(report).toMatchObject({
        terminated: 20,
        // Four workers terminated as soon as their work was queued, sixteen 1 to 37 ms into it.
        delays: [0, 7, 14, 21, 28, 0, 1, 8, 15, 22, 0, 36, 2, 9, 16, 0, 30, 37, 3, 10],
        beforeWork: [1, 1],
        afterWork: [7, 7],
        // The main thread's books: untouched by the workers' Devices, nothing left after its close.
        liveBuffers: { before: 0, after: 0, closed: 0 },
        bufferBytes: { before: 0, after: 0, closed: 0 },
        quarantined: 0,
        abandoned: 0,
        buffersMadeHere: 0,
      });
      // Each worker's stream threads are joined and its descriptors closed.
      expect(result.threads.after).toBe(result.threads.before);
      expect(result.fds.after).toBe(result.fds.before);
      // Each worker made 16 MiB resident: 320 MiB would stay if their memory leaked (measured: 1.1-5.0 MiB
      // of growth, the allocator's and V8's own; the mappings within 8 of where they were).
      expect(result.rssGrowthKiB).toBeLessThan(64 * 1024);
      expect(Math.abs(result.maps.after - result.maps.before)).toBeLessThanOrEqual(16);
    });
  },
);
