// Fault injection. On the mock: system allocations that fail (once: the allocator clears the cache and
// retries; twice: OutOfMemoryError, nothing counted twice), residency sets that cannot be made part way,
// wiring that fails. On the real host backend: a child process whose RLIMIT_MEMLOCK is lowered (and, as
// root, whose CAP_IPC_LOCK is dropped) cannot wire; the device counts it and keeps working.
import { MockBackend } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { describe, expect, it, onTestFinished } from "vitest";
import { thrown } from "../../../stats/test/thrown.js";
import { Device, type DeviceBuffer, type DeviceOptions } from "../../src/index.js";
import { budget, captureWarnings, childUnavailableReason, runChild, sectionFigures } from "./support.js";

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

const figures = sectionFigures("faults", {
  allocationFaultsInjected: 0,
  allocationFaultsRetried: 0,
  allocationFaultsRefused: 0,
  residencySetFaults: 0,
  wiringFaultsInjected: 0,
  hostWiringFailures: 0,
  hostMemlockChild: "not run" as string,
  survived: 0,
});

function mockDevice(options: DeviceOptions = {}) {
  const backend = new MockBackend({ memorySize: 16 * GIB, realFiles: false });
  // MLX's policy keeps every freed buffer: the retry's cache clearing has a full cache to clear.
  return { backend, device: Device.open({ backend, policy: "mlx", ...options }) };
}

/** The counters that must agree between the allocator and the backend whatever failed. */
function expectBooksBalance(device: Device, backend: MockBackend): void {
  const counters = device.counters();
  const native = backend.counters();
  // Every system allocation counted is one buffer the backend made, and each release one it released.
  expect(counters.systemAllocations).toBe(native.buffersMade);
  expect(counters.systemReleases).toBe(native.buffersReleased);
  expect(backend.liveBuffers.length).toBe(counters.liveBuffers + counters.cachedBuffers);
  expect(device.memoryStats().systemAllocations).toBe(native.buffersMade);
}

describe("a failing system allocation (mock)", () => {
  it("fails once: the cache is cleared, the allocation retried once and counted once", () => {
    const { backend, device } = mockDevice();
    const kept = device.malloc(MIB);
    for (const bytes of [2 * MIB, 3 * MIB, 5 * MIB]) device.malloc(bytes).free();
    const before = device.memoryStats();
    const countersBefore = device.counters();
    expect(before.cache).toBe(10 * MIB);
    const failing = backend.bufferAttempts + 1;
    backend.failAllocation = (_bytes, attempt) => attempt === failing;
    figures.allocationFaultsInjected += 1;
    const buffer = device.malloc(64 * MIB); // a miss: no cached buffer fits
    figures.allocationFaultsRetried += 1;
    const after = device.memoryStats();
    const counters = device.counters();
    expect(counters.allocationRetries).toBe(countersBefore.allocationRetries + 1);
    expect(counters.systemAllocations).toBe(countersBefore.systemAllocations + 1);
    expect(counters.cacheMisses).toBe(countersBefore.cacheMisses + 1);
    expect(counters.systemReleases).toBe(countersBefore.systemReleases + 3); // the cleared cache
    expect(after).toEqual({
      ...before,
      active: before.active + 64 * MIB,
      peakActive: Math.max(before.peakActive, before.active + 64 * MIB),
      activeWithMapped: before.activeWithMapped + 64 * MIB,
      peakActiveWithMapped: Math.max(before.peakActiveWithMapped, before.activeWithMapped + 64 * MIB),
      cache: 0,
      reserved: before.active + 64 * MIB,
      peakReserved: Math.max(before.peakReserved, before.active + 64 * MIB),
      systemAllocations: before.systemAllocations + 1,
    });
    expectBooksBalance(device, backend);
    buffer.free();
    kept.free();
    figures.survived += 1;
    device.close();
  });

  it("fails twice: OutOfMemoryError with the backend's error as cause; only the cache changed", () => {
    const { backend, device } = mockDevice();
    const kept = device.malloc(MIB);
    device.malloc(2 * MIB).free();
    const before = device.memoryStats();
    const countersBefore = device.counters();
    const firstFailing = backend.bufferAttempts + 1;
    backend.failAllocation = (_bytes, attempt) => attempt === firstFailing || attempt === firstFailing + 1;
    figures.allocationFaultsInjected += 2;
    const error = thrown(() => device.malloc(64 * MIB));
    figures.allocationFaultsRefused += 1;
    // The allocator's own error (the limit was not reached, the system failed), the backend's as its cause.
    expect(error).toMatchObject({
      name: "OutOfMemoryError",
      code: "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED",
      requested: 64 * MIB,
    });
    expect((error as Error).cause).toMatchObject({
      name: "OutOfMemoryError",
      code: "ERR_NUVEC_ALLOCATION_FAILED",
    });
    // The retry released the cache (that is its point); every other field is as before.
    expect(device.memoryStats()).toEqual({ ...before, cache: 0, reserved: before.active });
    const counters = device.counters();
    expect(counters).toEqual({
      ...countersBefore,
      allocationRetries: countersBefore.allocationRetries + 1,
      systemReleases: countersBefore.systemReleases + 1,
      cachedBuffers: 0,
      backend: counters.backend,
    });
    expectBooksBalance(device, backend);
    // The device keeps working.
    const next = device.malloc(64 * MIB);
    expect(device.memoryStats().active).toBe(65 * MIB);
    next.free();
    kept.free();
    figures.survived += 1;
    device.close();
  });

  it("random failures in random workloads: nothing counted twice, nothing lost, the device keeps working", () => {
    const runs = budget("NUVEC_FAULT_RUNS", 100, 2000);
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant("malloc" as const), bytes: fc.integer({ min: 1, max: 3 * MIB }) }),
            fc.record({ op: fc.constant("free" as const), pick: fc.nat() }),
            fc.record({ op: fc.constant("clear" as const) }),
          ),
          { maxLength: 80 },
        ),
        fc.uniqueArray(fc.integer({ min: 1, max: 24 }), { maxLength: 10 }),
        (operations, failing) => {
          const backend = new MockBackend({
            memorySize: 256 * MIB,
            realFiles: false,
            failAllocation: (_bytes, attempt) => failing.includes(attempt),
          });
          const device = Device.open({ backend, wiredLimit: 32 * MIB });
          const live: DeviceBuffer[] = [];
          let refusals = 0;
          for (const operation of operations) {
            if (operation.op === "malloc") {
              const attempts = backend.bufferAttempts;
              const before = device.memoryStats();
              try {
                live.push(device.malloc(operation.bytes));
              } catch (error) {
                const code = (error as { code?: string }).code;
                expect(["ERR_NUVEC_SYSTEM_ALLOCATION_FAILED", "ERR_NUVEC_OUT_OF_MEMORY"]).toContain(code);
                if (code === "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED") {
                  refusals += 1;
                  expect(backend.bufferAttempts).toBe(attempts + 2); // once, then once more: no third try
                }
                // The retry's clearCache released the cache (reserved is active again, what of it was wired is
                // unwired); nothing else moved.
                const clearedFields = { cache: 0, reserved: before.active, wired: 0, wiredMapped: 0 };
                expect({ ...device.memoryStats(), ...clearedFields }).toEqual({
                  ...before,
                  ...clearedFields,
                });
              }
            } else if (operation.op === "free" && live.length > 0) {
              live.splice(operation.pick % live.length, 1)[0]!.free();
            } else if (operation.op === "clear") {
              device.clearCache();
            }
            expectBooksBalance(device, backend);
            const stats = device.memoryStats();
            expect(stats.wired).toBe(backend.counters().wiredBytes);
            expect(stats.active).toBe(live.reduce((sum, buffer) => sum + buffer.allocatedLength, 0));
          }
          const injected = failing.filter((attempt) => attempt <= backend.bufferAttempts).length;
          figures.allocationFaultsInjected += injected;
          figures.allocationFaultsRefused += refusals;
          figures.allocationFaultsRetried += device.counters().allocationRetries - refusals;
          figures.survived += injected;
          device.close();
          expect(backend.liveBuffers.length).toBe(0);
          expect(backend.counters().wiredBytes).toBe(0);
        },
      ),
      { numRuns: runs, verbose: 1 },
    );
  });
});

describe("residency sets that cannot be made (mock)", () => {
  it("part way: later buffers go to the emptiest set, wired stays what the backend wired", () => {
    // A cap of max(1% of 12 GiB, 64 MiB) per set: one 100 MiB buffer fills a set.
    const { backend, device } = mockDevice({ residencySetMaxPercent: 1 });
    backend.residencySetLimit = 3;
    figures.residencySetFaults += 1;
    device.setWiredLimit(2 * GIB);
    const buffers = Array.from({ length: 6 }, () => device.malloc(100 * MIB));
    expect(backend.counters().residencySetsMade).toBe(3);
    expect(device.info().residencySets).toBe(3);
    expect(device.memoryStats().wired).toBe(600 * MIB);
    expect(backend.counters().wiredBytes).toBe(600 * MIB);
    // Lifted: the next buffers get sets of their own again.
    backend.residencySetLimit = undefined;
    const more = device.malloc(100 * MIB);
    expect(device.info().residencySets).toBeGreaterThan(3);
    expect(device.memoryStats().wired).toBe(backend.counters().wiredBytes);
    for (const buffer of [...buffers, more]) buffer.free();
    device.clearCache();
    expect(device.memoryStats().wired).toBe(0);
    expect(backend.counters().wiredBytes).toBe(0);
    figures.survived += 1;
    device.close();
    expect(backend.liveResidencySets.length).toBe(0);
  });

  it("from the start: residency unsupported, the limit stored, nothing wired, everything else works", () => {
    const backend = new MockBackend({ realFiles: false, residencySetLimit: 0 });
    const device = Device.open({ backend });
    figures.residencySetFaults += 1;
    expect(device.info().residencySupported).toBe(false);
    expect(device.setWiredLimit(GIB)).toBe(0);
    const buffer = device.malloc(10 * MIB);
    expect(device.memoryStats()).toMatchObject({ wired: 0, wiredLimit: GIB, active: 10 * MIB });
    device.refreshResidency();
    buffer.free();
    figures.survived += 1;
    device.close();
  });
});

describe("wiring that fails (mock)", () => {
  it("is counted, never thrown; the device keeps allocating, mapping and freeing", () => {
    // The Device's one wiring warning is captured and checked here, not printed.
    const { warnings, restore } = captureWarnings();
    onTestFinished(restore);
    const { backend, device } = mockDevice();
    backend.addFile("/weights.bin", 5 * MIB);
    backend.failWiring = (allocation) => allocation.allocatedSize >= 4 * MIB;
    device.setWiredLimit(GIB);
    const small = device.malloc(MIB);
    const large = device.malloc(8 * MIB);
    const file = device.mapFile("/weights.bin");
    const failures = device.counters().backend.wiringFailures;
    expect(failures).toBe(2);
    figures.wiringFaultsInjected += failures;
    // The manager placed all three (within the limit); the backend wired only the small one.
    expect(backend.counters().wiredBytes).toBe(MIB);
    expect(device.memoryStats().wired).toBeLessThanOrEqual(GIB);
    new Uint8Array(large.contents())[0] = 7;
    expect(new Uint8Array(large.contents())[0]).toBe(7);
    device.refreshResidency(); // asks again: fails again, counted again, still not thrown
    expect(device.counters().backend.wiringFailures).toBeGreaterThan(failures);
    figures.wiringFaultsInjected += device.counters().backend.wiringFailures - failures;
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.options).toEqual({ type: "NuvecWiringWarning", code: "NUVEC_WIRING_FAILED" });
    // Emitted at the first failure (the large buffer), once per Device.
    expect(warnings[0]?.message).toBe(
      `nuvec: the system refused to wire memory (1 failure): memoryStats().wired says ${9 * MIB} bytes (what ` +
        `residency asked for), the platform wired ${MIB} (counters().wiredByPlatform). mock: wiring ${8 * MIB} ` +
        "bytes failed (the failWiring fault)",
    );
    backend.failWiring = false;
    device.setWiredLimit(0);
    device.setWiredLimit(GIB); // the waiting ones are wired now that wiring works
    expect(backend.counters().wiredBytes).toBe(device.memoryStats().wired);
    small.free();
    large.free();
    file.free();
    device.clearCache();
    expect(backend.counters().wiredBytes).toBe(0);
    figures.survived += 1;
    device.close();
  });
});

const hostChildReason = childUnavailableReason(true);

describe.skipIf(hostChildReason !== undefined)(
  `RLIMIT_MEMLOCK lowered on the host backend${hostChildReason ? ` (skipped: ${hostChildReason})` : ""}`,
  () => {
    it("makes wiring fail in a child process: counted, wired (residency's figure) next to what the platform locked, one warning per Device, and the device keeps working", () => {
      const result = runChild("memlock-child.mjs", { memlock: true });
      // Nothing on stderr but the wiring warning of each of the two Devices.
      expect(result.stderr.match(/NuvecWiringWarning/g)).toHaveLength(2);
      expect(
        result.stderr.replace(
          /^\(node:\d+\) \[NUVEC_WIRING_FAILED\] NuvecWiringWarning: .*\n(\(Use `node --trace-warnings.*\n)?/gm,
          "",
        ),
      ).toBe("");
      expect(result.signal).toBeNull();
      expect(result.status).toBe(0);
      type Figure = "wiringFailures" | "backendWiringFailures" | "wired" | "wiredByPlatform" | "backendWired";
      const report = result.report as Record<Figure | "vmLckBefore" | "vmLckWired", number>;
      // Residency asked for both 4 MiB buffers and the small one; the system locked at most 64 KiB. One
      // warning per Device (two Devices), each naming both figures and the advice.
      const warning = {
        name: "NuvecWiringWarning",
        code: "NUVEC_WIRING_FAILED",
        message: expect.stringMatching(/^(?=.*wiredByPlatform)(?=.*(RLIMIT_MEMLOCK|ulimit -l))/s),
      };
      expect(report).toMatchObject({
        lastWiringError: expect.stringMatching(/mlock|RLIMIT_MEMLOCK|memlock/i),
        wiredByPlatform: report.backendWired,
        worked: true,
        liveAfterClose: 0,
        vmLckAfter: report.vmLckBefore,
        warnings: [warning, warning],
      });
      expect(report.wiringFailures).toBeGreaterThan(0);
      expect(report.backendWiringFailures).toBeGreaterThan(0);
      expect(report.wired).toBeGreaterThanOrEqual(8 * MIB);
      expect(report.wiredByPlatform).toBeLessThanOrEqual(64 * 1024);
      expect(report.vmLckWired).toBeLessThanOrEqual(64 * 1024);
      figures.hostWiringFailures += report.backendWiringFailures;
      figures.hostMemlockChild = `wiring failed ${report.backendWiringFailures} times under a 64 KiB RLIMIT_MEMLOCK; device kept working`;
      figures.survived += 1;
    });
  },
);
