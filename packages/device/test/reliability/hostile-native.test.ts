// The hostile part of the reliability suite, native side (issue 11): probes that used to take the process
// down or let a view reach reused memory, run on the real host backend, each in a child process so that a
// crash shows as the child's signal, not as the test runner's death.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostAvailable, hostUnavailableReason, packageDirectory, recordFigures } from "./support.js";

const MIB = 1024 ** 2;
const children = join(packageDirectory, "test/reliability/children");
const deviceBuilt = existsSync(join(packageDirectory, "dist/index.js"));
const skipReason = !hostAvailable
  ? hostUnavailableReason
  : !deviceBuilt
    ? "packages/device/dist is not built (the children import @nuvec/device)"
    : undefined;
const figures: Record<string, unknown> = {};

/** Runs a child script with Node; its last stdout line is its JSON report. */
function runChild(
  script: string,
  args: string[] = [],
  nodeOptions: string[] = [],
): { status: number | null; signal: NodeJS.Signals | null; stderr: string; report: unknown } {
  const result = spawnSync(process.execPath, [...nodeOptions, join(children, script), ...args], {
    encoding: "utf8",
    cwd: packageDirectory,
  });
  const last = result.stdout.trim().split("\n").at(-1) ?? "";
  let report: unknown = last;
  try {
    report = JSON.parse(last);
  } catch {
    // left as text: the assertions show it
  }
  return { status: result.status, signal: result.signal, stderr: result.stderr, report };
}

describe.skipIf(skipReason !== undefined)(
  `hostile use of a Device on the host backend${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let folder: string;
    beforeAll(() => {
      folder = mkdtempSync(join(tmpdir(), "nuvec-hostile-device-"));
    });
    afterAll(() => {
      rmSync(folder, { recursive: true, force: true });
      recordFigures("hostile-native", figures);
    });

    it("setWiredLimit after someone truncated a mapped file: no SIGBUS, counters truthful, re-wiring too", () => {
      const path = join(folder, "truncated.bin");
      writeFileSync(path, new Uint8Array(MIB).fill(5));
      const { status, signal, stderr, report } = runChild("hostile-truncate-wire.mjs", [path]);
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      const result = report as {
        first: {
          counters: { wiredBytes: number; wiringFailures: number };
          stats: { wired: number };
          locked: number;
        };
        again: { counters: { wiredBytes: number; wiringFailures: number }; locked: number };
        firstByte: number;
        after: { wiredBytes: number; mappedBytes: number };
        lockedAfter: number;
      };
      // Nothing locked and nothing counted as locked; each attempt counted as a failure.
      expect(result.first.counters.wiredBytes).toBe(0);
      expect(result.first.locked).toBe(0);
      expect(result.first.counters.wiringFailures).toBeGreaterThanOrEqual(1);
      expect(result.again.counters.wiredBytes).toBe(0);
      expect(result.again.locked).toBe(0);
      expect(result.again.counters.wiringFailures).toBeGreaterThan(result.first.counters.wiringFailures);
      expect(result.firstByte).toBe(5);
      expect(result.after).toMatchObject({ wiredBytes: 0, mappedBytes: 0 });
      expect(result.lockedAfter).toBe(0);
      figures.truncatedWiring = `wiring a truncated mapped file failed ${result.again.counters.wiringFailures} times, no SIGBUS`;
    });
    it("views moved away with transfer() never reach the next owner's memory nor unmapped memory; 0-byte views are per buffer", () => {
      const path = join(folder, "transfer.bin");
      const { status, signal, stderr, report } = runChild(
        "hostile-transfer.mjs",
        [path],
        ["--harmony-rab-gsab-transfer", "--expose-gc"],
      );
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
  },
);
