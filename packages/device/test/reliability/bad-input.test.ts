// The bad input catalogue: every public entry point of the Device with every kind of bad value, misuse of
// buffers, mappings and closed devices, and bad files. Each case must throw an error with a string `code`
// (of a known class) and leave memoryStats() and counters() (the backend's included) exactly as they were.
// `-0` is accepted as 0 everywhere a byte count is taken (@nuvec/stats' DECISIONS.md).
// Runs on the mock and, when it loads, on the real host backend. Cases that show a bug not fixed yet are
// `it.fails` (marked KNOWN BUG); NUVEC_SHOW_BUGS=1 runs them as ordinary tests to see why they fail.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { afterAll, describe, expect, it } from "vitest";
import { Device, type DeviceOptions } from "../../src/index.js";
import {
  hostAvailable,
  hostBackend,
  hostUnavailableReason,
  packageDirectory,
  recordFigures,
} from "./support.js";

const MIB = 1024 ** 2;
const folder = mkdtempSync(join(tmpdir(), "nuvec-reliability-bad-input-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const paths = {
  file: join(folder, "good.bin"),
  empty: join(folder, "empty.bin"),
  directory: join(folder, "directory"),
  unreadable: join(folder, "unreadable.bin"),
  missing: join(folder, "missing.bin"),
};
writeFileSync(paths.file, new Uint8Array(3 * 4096 + 5).fill(9));
writeFileSync(paths.empty, "");
mkdirSync(paths.directory);
writeFileSync(paths.unreadable, "secret");
chmodSync(paths.unreadable, 0o000);
/** As root, chmod 000 does not stop reading: the unreadable-file case is skipped then. */
const isRoot = process.getuid?.() === 0;

const tally: Record<
  string,
  { tried: number; passed: number; skipped: string[]; knownBugCases: number; knownBugs: string[] }
> = {};
afterAll(() => recordFigures("bad-input", { backends: tally }));

/** Bad byte counts: every kind a caller can pass. `-0` is not among them: it is accepted (see below). */
function badByteCounts(maxBufferLength: number): [string, unknown][] {
  return [
    ["negative", -1],
    ["negative large", -(2 ** 40)],
    ["fractional", 1.5],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["bigint", 1024n],
    ["string", "1024"],
    ["undefined", undefined],
    ["null", null],
    ["object", { valueOf: () => 1024 }],
    ["2**53", 2 ** 53],
    ["above max buffer length", maxBufferLength + 1],
  ];
}

type Deviceish = ReturnType<typeof Device.open>;

interface Case {
  name: string;
  /** Does the bad thing; must throw. */
  act: (context: Context) => unknown;
  /** A bug found by this suite, not fixed yet: the case is expected to fail until it is. */
  knownBug?: string;
  skip?: string;
}

interface Context {
  device: Deviceish;
  other: Deviceish;
  open: (options: DeviceOptions) => Deviceish;
}

/** memoryStats and counters (after close: the last ones, which stay readable) and the backend's counters. */
function snapshot(device: Deviceish): unknown {
  return { closed: device.closed, stats: device.memoryStats(), counters: device.counters() };
}

function catalogue(maxBufferLength: number, workingSet: number): Case[] {
  const cases: Case[] = [];
  const numeric: [string, (device: Deviceish, value: unknown) => unknown][] = [
    ["malloc", (device, value) => device.malloc(value as number)],
    ["setMemoryLimit", (device, value) => device.setMemoryLimit(value as number)],
    ["setCacheLimit", (device, value) => device.setCacheLimit(value as number)],
    ["setWiredLimit", (device, value) => device.setWiredLimit(value as number)],
  ];
  for (const [entry, call] of numeric) {
    for (const [kind, value] of badByteCounts(maxBufferLength)) {
      // Any byte count is a valid memory or cache limit (as MLX), so only malloc refuses a large one.
      if (kind === "above max buffer length" && entry !== "malloc") continue;
      cases.push({
        name: `${entry}(${kind})`,
        act: ({ device }) => call(device, value),
      });
    }
  }
  cases.push({
    name: `setWiredLimit(working set + 1)`,
    act: ({ device }) => device.setWiredLimit(workingSet + 1),
  });
  for (const [kind, value] of [
    ["0", 0],
    ["negative", -1],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["bigint", 10n],
    ["string", "10"],
    ["null", null],
  ] as [string, unknown][]) {
    cases.push({
      name: `startResidencyKeepAlive(${kind})`,
      act: ({ device }) => device.startResidencyKeepAlive(value as number),
    });
  }
  // Device.open: each bad option (every other option valid).
  const openCases: [string, unknown][] = [
    ["options null", null],
    ["options number", 5],
    ["options string", "fast"],
  ];
  for (const option of ["memoryLimit", "cacheLimit", "wiredLimit"]) {
    for (const [kind, value] of badByteCounts(maxBufferLength)) {
      if (kind === "above max buffer length" || kind === "undefined") continue; // undefined = the default
      openCases.push([`${option}: ${kind}`, { [option]: value }]);
    }
  }
  openCases.push(["wiredLimit above the working set", { wiredLimit: workingSet + 1 }]);
  for (const [kind, value] of [
    ["0", 0],
    ["negative", -5],
    ["NaN", Number.NaN],
    ["string", "100"],
  ] as [string, unknown][]) {
    openCases.push([`residencyKeepAliveMilliseconds: ${kind}`, { residencyKeepAliveMilliseconds: value }]);
  }
  openCases.push(["policy: unknown", { policy: "lru" }]);
  openCases.push(["reserveRatio: below 1", { policy: "bounded", reserveRatio: 0.5 }]);
  openCases.push(["reserveRatio: NaN", { policy: "bounded", reserveRatio: Number.NaN }]);
  for (const [name, options] of openCases) {
    cases.push({
      name: `Device.open(${name})`,
      act: ({ open }) => open(options as DeviceOptions),
    });
  }
  // Buffers: double free, use after free, another device's buffer, things that are not buffers.
  cases.push(
    {
      name: "double free",
      act: ({ device }) => {
        const buffer = device.malloc(1000);
        buffer.free();
        return () => buffer.free();
      },
    },
    {
      name: "contents() after free",
      act: ({ device }) => {
        const buffer = device.malloc(1000);
        buffer.free();
        return () => buffer.contents();
      },
    },
    {
      name: "bytes() after free",
      act: ({ device }) => {
        const buffer = device.malloc(MIB);
        buffer.free();
        return () => buffer.bytes();
      },
    },
    {
      name: "free of another device's buffer",
      act: ({ device, other }) => {
        const buffer = other.malloc(1000);
        return () => device.free(buffer);
      },
    },
    {
      name: "free() of another device's file",
      act: ({ device, other }) => {
        const file = other.mapFile(paths.file);
        return () => device.free(file);
      },
    },
    { name: "free(undefined)", act: ({ device }) => device.free(undefined as never) },
    { name: "free({})", act: ({ device }) => device.free({} as never) },
    { name: "free(ArrayBuffer)", act: ({ device }) => device.free(new ArrayBuffer(8) as never) },
    { name: "free(null)", act: ({ device }) => device.free(null as never) },
    {
      name: "release twice",
      act: ({ device }) => {
        const file = device.mapFile(paths.file);
        file.free();
        return () => file.free();
      },
    },
    {
      name: "mapping contents() after release",
      act: ({ device }) => {
        const file = device.mapFile(paths.file);
        file.free();
        return () => file.contents();
      },
    },
  );
  // Runtimes' native code: deferred frees with a bad `after`, handles after free, Metal options
  // where there is no Metal (the mock and the host).
  for (const [kind, after] of [
    ["number", 5],
    ["string", "later"],
    ["null", null],
    ["object without then", {}],
    // biome-ignore lint/suspicious/noThenProperty: a `then` that is not a function, refused on purpose
    ["non-function then", { then: 1 }],
  ] as [string, unknown][]) {
    cases.push(
      {
        name: `free({ after: ${kind} })`,
        act: ({ device }) => {
          const buffer = device.malloc(1000);
          return () => buffer.free({ after } as never);
        },
      },
      {
        name: `release({ after: ${kind} })`,
        act: ({ device }) => {
          const file = device.mapFile(paths.file);
          return () => file.free({ after } as never);
        },
      },
    );
  }
  cases.push(
    {
      name: "free(options: number)",
      act: ({ device }) => {
        const buffer = device.malloc(1000);
        return () => buffer.free(5 as never);
      },
    },
    {
      name: "nativeHandle() after free",
      act: ({ device }) => {
        const buffer = device.malloc(1000);
        buffer.free();
        return () => device.native.handle(buffer);
      },
    },
    {
      name: "nativeHandle() after a deferred free",
      act: ({ device }) => {
        const buffer = device.malloc(1000);
        buffer.free({ after: Promise.resolve() });
        return () => device.native.handle(buffer);
      },
    },
    {
      name: "mapping nativeHandle() after release",
      act: ({ device }) => {
        const file = device.mapFile(paths.file);
        file.free();
        return () => device.native.handle(file);
      },
    },
  );
  for (const [kind, metal] of [
    ["commandQueue off Metal", { commandQueue: 0x1000n }],
    ["device off Metal", { device: 0x2000n }],
    ["commandQueue: number", { commandQueue: 4096 }],
    ["device: 0n", { device: 0n }],
    ["metal: string", "queue"],
  ] as [string, unknown][]) {
    cases.push({ name: `Device.open(metal ${kind})`, act: ({ open }) => open({ metal } as DeviceOptions) });
  }
  // Paths and files.
  for (const [kind, value] of [
    ["undefined", undefined],
    ["number", 5],
    ["empty string", ""],
    ["NUL in the path", `${paths.file}\0x`],
    ["missing file", paths.missing],
    ["empty file", paths.empty],
    ["directory", paths.directory],
  ] as [string, unknown][]) {
    cases.push({ name: `mapFile(${kind})`, act: ({ device }) => device.mapFile(value as string) });
  }
  cases.push({
    name: "mapFile(unreadable file)",
    act: ({ device }) => device.mapFile(paths.unreadable),
    ...(isRoot ? { skip: "running as root: chmod 000 does not stop root from reading" } : {}),
  });
  // After close: every operation on the device, its buffers and its mappings.
  const afterClose: [
    string,
    (
      device: Deviceish,
      buffer: ReturnType<Deviceish["malloc"]>,
      file: ReturnType<Deviceish["mapFile"]>,
    ) => unknown,
  ][] = [
    ["malloc", (device) => device.malloc(100)],
    ["mapFile", (device) => device.mapFile(paths.file)],
    ["free", (device, buffer) => device.free(buffer)],
    ["buffer.free", (_device, buffer) => buffer.free()],
    ["buffer.contents", (_device, buffer) => buffer.contents()],
    ["file.release", (_device, _buffer, file) => file.free()],
    ["file.contents", (_device, _buffer, file) => file.contents()],
    ["setMemoryLimit", (device) => device.setMemoryLimit(MIB)],
    ["setCacheLimit", (device) => device.setCacheLimit(MIB)],
    ["setWiredLimit", (device) => device.setWiredLimit(MIB)],
    ["clearCache", (device) => device.clearCache()],
    ["resetPeak", (device) => device.resetPeak()],
    ["refreshResidency", (device) => device.refreshResidency()],
    ["startResidencyKeepAlive", (device) => device.startResidencyKeepAlive(100)],
    ["startTrace", (device) => device.startTrace()],
  ];
  for (const [name, call] of afterClose) {
    cases.push({
      name: `${name} after close`,
      act: ({ open }) => {
        const device = open({});
        const buffer = device.malloc(1000);
        const file = device.mapFile(paths.file);
        device.close();
        return { device, call: () => call(device, buffer, file) };
      },
    });
  }
  return cases;
}

/** Runs a case: set-up steps may return the throwing call (a function) or a closed device and its call. */
function runCase(testCase: Case, context: Context): void {
  const prepared = (() => {
    try {
      const result = testCase.act(context);
      if (typeof result === "function") return { device: context.device, call: result as () => unknown };
      if (typeof result === "object" && result !== null && "call" in result) {
        return result as { device: Deviceish; call: () => unknown };
      }
      return { device: context.device, call: undefined, returned: result };
    } catch (error) {
      return { device: context.device, call: undefined, thrownAtOnce: error };
    }
  })();
  if ("thrownAtOnce" in prepared) {
    // Thrown by the one call of the case: compare against the snapshot taken before it (see below).
    throw prepared.thrownAtOnce;
  }
  if (prepared.call === undefined)
    throw new Error(`${testCase.name} did not throw (returned ${String(prepared.returned)})`);
  const before = snapshot(prepared.device);
  let thrown: unknown;
  try {
    prepared.call();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, `${testCase.name} must throw`).toBeInstanceOf(Error);
  expect(typeof (thrown as { code?: unknown }).code, `${testCase.name}: ${String(thrown)}`).toBe("string");
  expect(snapshot(prepared.device)).toEqual(before);
}

function runCatalogue(
  name: string,
  make: () => {
    device: Deviceish;
    other: Deviceish;
    open: (options: DeviceOptions) => Deviceish;
    backendCounters: () => unknown;
    liveSets: () => number;
  },
): void {
  const probe = make();
  const cases = catalogue(
    probe.device.info().maxBufferLength,
    probe.device.info().recommendedMaxWorkingSetSize,
  );
  probe.device.close();
  probe.other.close();
  tally[name] = { tried: 0, passed: 0, skipped: [], knownBugCases: 0, knownBugs: [] };
  const record = tally[name];
  for (const testCase of cases) {
    const body = () => {
      const context = make();
      try {
        const before = snapshot(context.device);
        const countersBefore = context.backendCounters();
        const setsBefore = context.liveSets();
        let thrown: unknown;
        let direct = false;
        try {
          runCase(testCase, context);
        } catch (error) {
          thrown = error;
          direct = true;
        }
        if (direct) {
          // The case's single call threw: it must be a coded error, and nothing may have changed.
          if ((thrown as { name?: string }).name === "AssertionError") throw thrown;
          expect(thrown).toBeInstanceOf(Error);
          expect(typeof (thrown as { code?: unknown }).code, `${testCase.name}: ${String(thrown)}`).toBe(
            "string",
          );
          expect(snapshot(context.device)).toEqual(before);
          expect(context.backendCounters()).toEqual(countersBefore);
          expect(context.liveSets()).toBe(setsBefore);
        }
      } finally {
        context.device.close();
        context.other.close();
      }
    };
    record.tried += 1;
    if (testCase.skip !== undefined) {
      record.tried -= 1;
      record.skipped.push(`${testCase.name}: ${testCase.skip}`);
      it.skip(`${testCase.name} (${testCase.skip})`, body);
    } else if (testCase.knownBug !== undefined) {
      record.knownBugCases += 1;
      if (!record.knownBugs.includes(testCase.knownBug)) record.knownBugs.push(testCase.knownBug);
      (process.env.NUVEC_SHOW_BUGS ? it : it.fails)(
        `${testCase.name} — KNOWN BUG: ${testCase.knownBug}`,
        body,
      );
    } else {
      it(testCase.name, () => {
        body();
        record.passed += 1;
      });
    }
  }
}

describe("bad input catalogue on the mock", () => {
  runCatalogue("mock", () => {
    const backend = new MockBackend({ memorySize: 16 * 1024 * MIB });
    const open = (options: DeviceOptions) =>
      Device.open(typeof options === "object" && options !== null ? { ...options, backend } : options);
    return {
      device: open({}),
      other: Device.open({ backend: new MockBackend() }),
      open,
      backendCounters: () => backend.counters(),
      liveSets: () => backend.liveResidencySets.length,
    };
  });
});

describe.skipIf(!hostAvailable)(
  `bad input catalogue on the host backend${hostAvailable ? "" : ` (skipped: ${hostUnavailableReason})`}`,
  () => {
    if (!hostAvailable) return;
    runCatalogue("host", () => {
      const backend = hostBackend();
      const open = (options: DeviceOptions) => Device.open(options);
      return {
        device: open({}),
        other: open({}),
        open,
        backendCounters: () => backend.counters(),
        liveSets: () => 0,
      };
    });
  },
);

describe("-0 is accepted as 0", () => {
  it("malloc(-0) is an empty buffer, and the setters take -0 as a limit of 0", () => {
    const backend = new MockBackend();
    const device = Device.open({ backend });
    const empty = device.malloc(-0);
    expect(empty.allocatedLength).toBe(0);
    empty.free();
    expect(device.setCacheLimit(-0)).toBeGreaterThan(0);
    expect(device.setWiredLimit(-0)).toBe(0);
    expect(device.setMemoryLimit(-0)).toBeGreaterThan(0);
    const stats = device.memoryStats();
    expect(stats.memoryLimit === 0 && stats.cacheLimit === 0 && stats.wiredLimit === 0).toBe(true);
    device.close();
  });
});

const truncateChild = join(packageDirectory, "test/reliability/children/truncate-child.mjs");

describe("a file truncated after it was mapped", () => {
  it("mock: release works and the accounts are right (the mock read the file when it mapped it)", () => {
    const path = join(folder, "truncated-mock.bin");
    writeFileSync(path, new Uint8Array(MIB).fill(1));
    const backend = new MockBackend();
    const device = Device.open({ backend });
    const file = device.mapFile(path);
    truncateSync(path, 100);
    expect(device.memoryStats().mapped).toBe(MIB);
    file.free();
    expect(device.memoryStats().mapped).toBe(0);
    expect(backend.counters().mappedBytes).toBe(0);
    device.close();
  });

  it.skipIf(!hostAvailable)(
    "host: release works and the accounts are right (the mapping is not read)",
    () => {
      const path = join(folder, "truncated-host.bin");
      writeFileSync(path, new Uint8Array(MIB).fill(1));
      const device = Device.open();
      const before = device.counters().backend;
      const file = device.mapFile(path);
      truncateSync(path, 100);
      // Reading past the new end would raise SIGBUS in this process: that is left to the child below.
      expect(device.memoryStats().mapped).toBe(MIB);
      file.free();
      expect(device.memoryStats().mapped).toBe(0);
      expect(device.counters().backend.mappedBytes).toBe(before.mappedBytes);
      device.close();
    },
  );

  it.skipIf(!hostAvailable)(
    "host, in a child process: reading past the new end is SIGBUS (what mmap does; documented, not caught)",
    () => {
      const path = join(folder, "truncated-child.bin");
      writeFileSync(path, new Uint8Array(MIB).fill(1));
      const result = spawnSync(process.execPath, [truncateChild, path], {
        encoding: "utf8",
        cwd: packageDirectory,
      });
      expect(result.stdout).toContain("mapped");
      expect(result.signal).toBe("SIGBUS");
    },
  );
});
