// The hostile part of the reliability suite, native side: probes of what could take the process
// down or let a view reach reused memory, run on the real host backend, each in a child process so that a
// crash shows as the child's signal, not as the test runner's death.
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { childUnavailableReason, runChild, sectionFigures } from "./support.js";

const MIB = 1024 ** 2;
const skipReason = childUnavailableReason();
const figures = sectionFigures("hostile-native", {} as Record<string, unknown>);
const scratch = scratchFolder("nuvec-hostile-device-");

describe.skipIf(skipReason !== undefined)(
  `hostile use of a Device on the host backend${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    it("setWiredLimit after someone truncated a mapped file: no SIGBUS, counters truthful, re-wiring too", () => {
      const path = scratch.write("truncated.bin", new Uint8Array(MIB).fill(5));
      const { status, signal, stderr, report } = runChild("hostile-truncate-wire.mjs", { args: [path] });
      expect(signal).toBeNull();
      // The one warning of the Device: the file shrank, nothing wired.
      expect(stderr.match(/NuvecWiringWarning/g)).toHaveLength(1);
      expect(stderr).toMatch(/shorter than when it was mapped/);
      expect(status).toBe(0);
      // Nothing locked and nothing counted as locked; each attempt counted as a failure.
      expect(report).toMatchObject({
        first: { counters: { wiredBytes: 0 }, locked: 0 },
        again: { counters: { wiredBytes: 0 }, locked: 0 },
        firstByte: 5,
        after: { wiredBytes: 0, mappedBytes: 0 },
        lockedAfter: 0,
      });
      const failures = (attempt: "first" | "again") =>
        (report as Record<typeof attempt, { counters: { wiringFailures: number } }>)[attempt].counters
          .wiringFailures;
      expect(failures("first")).toBeGreaterThanOrEqual(1);
      expect(failures("again")).toBeGreaterThan(failures("first"));
      figures.truncatedWiring = `wiring a truncated mapped file failed ${failures("again")} times, no SIGBUS`;
    });
    it("views moved away with transfer() never reach the next owner's memory nor unmapped memory; 0-byte views are per buffer", () => {
      const { status, signal, stderr, report } = runChild("hostile-transfer.mjs", {
        args: [`${scratch.folder}/transfer.bin`],
        nodeOptions: ["--harmony-rab-gsab-transfer", "--expose-gc"],
      });
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      expect(report).toEqual({
        transfer: {
          movedLength: MIB,
          movedSeesNewOwner: false,
          newOwnerSeesMovedWrite: false,
          // The moved buffer was not cached: the second malloc could not reuse it.
          cacheHits: 0,
          quarantined: 1,
        },
        clearCache: { readBack: true },
        mappedRelease: { readBack: true },
        safetyNet: { reclaimed: 1, movedSeesNewOwner: false, movedKeepsOldBytes: true },
        empty: { otherWorks: true, sameWorks: true, otherDeviceWorks: true },
        end: { quarantined: 0, liveBuffers: 0 },
      });
      figures.transfer =
        "moved views kept their own bytes; quarantined memory freed once they were collected";
    });
    it("two Devices mapping 40,000 times each: the per-process map count is shared, the second is refused (typed) and V8 lives", () => {
      const path = scratch.write("two-devices.bin", new Uint8Array(4096).fill(1));
      const { status, signal, stderr, report } = runChild("hostile-two-devices.mjs", { args: [path] });
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      expect(report).toMatchObject({
        first: 40_000,
        refusals: [{ device: "second", name: "OutOfMemoryError", cause: "OutOfMemoryError" }],
        mapRefusal: { name: "OutOfMemoryError" },
        jsWorked: true,
        liveAfter: 0,
      });
      const { limit, first, second } = report as { limit: number; first: number; second: number };
      // Together at most the process's limit (vm.max_map_count less the runtime's headroom).
      expect(first + second).toBeLessThanOrEqual(limit);
      expect(second).toBeLessThan(40_000);
      figures.twoDevices = `two Devices held ${first} + ${second} buffers (process limit ${limit}); the second was refused with OutOfMemoryError`;
    });
    it("worker.terminate() while a worker is inside Device calls never aborts the process (30 workers)", () => {
      const path = scratch.write("terminate.bin", new Uint8Array(256 * 1024).fill(9));
      const { status, signal, stderr, report } = runChild("hostile-terminate.mjs", { args: [path] });
      expect(stderr).not.toMatch(/terminate called|Aborted|FATAL/);
      expect(signal).toBeNull();
      expect(status).toBe(0);
      expect(report).toEqual({ terminated: 30 });
      figures.terminate = "30 workers terminated inside native calls; the process lived";
    });
  },
);
