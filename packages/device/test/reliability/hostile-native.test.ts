// The hostile part of the reliability suite, native side: probes of what could take the process
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
const isRoot = process.getuid?.() === 0;
// As root, CAP_IPC_LOCK ignores RLIMIT_MEMLOCK: it must be dropped (setpriv) for wiring to fail.
const canDropLock =
  spawnSync("prlimit", ["--version"]).status === 0 &&
  (!isRoot || spawnSync("setpriv", ["--version"]).status === 0);

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
      // The one warning of the Device: the file shrank, nothing wired.
      expect(stderr.match(/NuvecWiringWarning/g)).toHaveLength(1);
      expect(stderr).toMatch(/shorter than when it was mapped/);
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
    it.skipIf(!canDropLock)(
      "wiring refused by RLIMIT_MEMLOCK: wired (residency's figure) next to what the platform locked, one warning per Device",
      () => {
        // 64 KiB of locked memory at most; as root, CAP_IPC_LOCK (which ignores the limit) is dropped too.
        const command = ["prlimit", "--memlock=65536:65536"];
        if (isRoot) command.push("setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock");
        command.push(process.execPath, join(children, "hostile-memlock.mjs"));
        const result = spawnSync(command[0] as string, command.slice(1), {
          encoding: "utf8",
          cwd: packageDirectory,
        });
        expect(result.signal).toBeNull();
        expect(result.status).toBe(0);
        const report = JSON.parse(result.stdout.trim().split("\n").at(-1) as string) as {
          wired: number;
          wiredByPlatform: number;
          backendWired: number;
          wiringFailures: number;
          locked: number;
          warnings: Array<{ name: string; code: string; message: string }>;
        };
        // Residency asked for both 4 MiB buffers and the small one; the system locked at most 64 KiB.
        expect(report.wired).toBeGreaterThanOrEqual(8 * MIB);
        expect(report.wiredByPlatform).toBe(report.backendWired);
        expect(report.wiredByPlatform).toBeLessThanOrEqual(64 * 1024);
        expect(report.locked).toBeLessThanOrEqual(64 * 1024);
        expect(report.wiringFailures).toBeGreaterThan(0);
        // One warning per Device (two Devices), each naming both figures and the advice.
        expect(report.warnings).toHaveLength(2);
        for (const warning of report.warnings) {
          expect(warning.name).toBe("NuvecWiringWarning");
          expect(warning.code).toBe("NUVEC_WIRING_FAILED");
          expect(warning.message).toMatch(/wiredByPlatform/);
          expect(warning.message).toMatch(/RLIMIT_MEMLOCK|ulimit -l/);
        }
        figures.memlock = `wired ${report.wired} (residency) vs ${report.wiredByPlatform} locked by the platform; ${report.warnings.length} warnings for 2 Devices`;
      },
    );
    it("two Devices mapping 40,000 times each: the per-process map count is shared, the second is refused (typed) and V8 lives", () => {
      const path = join(folder, "two-devices.bin");
      writeFileSync(path, new Uint8Array(4096).fill(1));
      const { status, signal, stderr, report } = runChild("hostile-two-devices.mjs", [path]);
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      const result = report as {
        limit: number;
        first: number;
        second: number;
        refusals: Array<{ device: string; name: string; code: string; cause: string }>;
        mapRefusal: { name: string; code: string } | undefined;
        jsWorked: boolean;
        liveAfter: number;
      };
      expect(result.first).toBe(40_000);
      // Together at most the process's limit (vm.max_map_count less the runtime's headroom).
      expect(result.first + result.second).toBeLessThanOrEqual(result.limit);
      expect(result.second).toBeLessThan(40_000);
      expect(result.refusals).toHaveLength(1);
      expect(result.refusals[0]).toMatchObject({
        device: "second",
        name: "OutOfMemoryError",
        cause: "OutOfMemoryError",
      });
      expect(result.mapRefusal?.name).toBe("OutOfMemoryError");
      expect(result.jsWorked).toBe(true);
      expect(result.liveAfter).toBe(0);
      figures.twoDevices = `two Devices held ${result.first} + ${result.second} buffers (process limit ${result.limit}); the second was refused with ${result.refusals[0]?.name}`;
    });
    it("worker.terminate() while a worker is inside Device calls never aborts the process (30 workers)", () => {
      const path = join(folder, "terminate.bin");
      writeFileSync(path, new Uint8Array(256 * 1024).fill(9));
      const { status, signal, stderr, report } = runChild("hostile-terminate.mjs", [path]);
      expect(stderr).not.toMatch(/terminate called|Aborted|FATAL/);
      expect(signal).toBeNull();
      expect(status).toBe(0);
      expect(report).toEqual({ terminated: 30 });
      figures.terminate = "30 workers terminated inside native calls; the process lived";
    });
  },
);
