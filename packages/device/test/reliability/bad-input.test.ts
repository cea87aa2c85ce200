// The bad input catalogue: every public entry point of the Device with every kind of bad value, misuse of
// buffers, mappings and closed devices, and bad files. Each case must throw the error it names (class, code,
// the argument it names) and leave memoryStats() and counters() of both devices, the backend's counters and
// its residency sets exactly as they were. `-0` is accepted as 0 everywhere a byte count is taken
// (@nuvec/stats' DECISIONS.md; src/schemas.test.ts). Runs on the mock and, when it loads, on the host backend.
// The cases are in bad-input-cases.ts and bad-input-look-alikes.ts; this file runs them on each backend.
import { truncateSync } from "node:fs";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { thrown } from "../../../stats/test/thrown.js";
import { Device, type DeviceOptions } from "../../src/index.js";
import { DEVICE_OPEN } from "../../src/schemas.js";
import { catalogue, openCases } from "./bad-input-cases.js";
import { lookAlikeCases } from "./bad-input-look-alikes.js";
import { type Case, type Context, MIB, scratch } from "./bad-input-support.js";
import { describeOnHost, hostAvailable, hostBackend, runChild, sectionFigures } from "./support.js";

const tally: Record<string, { tried: number; passed: number; skipped: string[] }> = {};
sectionFigures("bad-input", { backends: tally });

/** The figures a refused call must leave as they were (after close: the last ones, which stay readable). */
function snapshot(device: Device): unknown {
  return { closed: device.closed, stats: device.memoryStats(), counters: device.counters() };
}

interface Opened extends Context {
  backendCounters: () => unknown;
  liveSets: () => number;
}

/** Sets the case up, then expects its call to throw its error and change nothing anywhere. */
function runCase(testCase: Case, context: Opened): void {
  const prepared = testCase.act(context);
  const { device, call } =
    typeof prepared === "function" ? { device: context.device, call: prepared } : prepared;
  const everything = () => ({
    device: snapshot(device),
    other: snapshot(context.other),
    backend: context.backendCounters(),
    sets: context.liveSets(),
  });
  const before = everything();
  const error = thrown(call);
  expect(error).toBeInstanceOf(Error);
  expect(error).toMatchObject(testCase.error);
  expect(everything()).toEqual(before);
}

function runCatalogue(name: string, make: () => Opened): void {
  const probe = make();
  const { maxBufferLength, recommendedMaxWorkingSetSize } = probe.device.info();
  const cases = catalogue(maxBufferLength, recommendedMaxWorkingSetSize);
  probe.device.close();
  probe.other.close();
  const record = { tried: 0, passed: 0, skipped: [] as string[] };
  tally[name] = record;
  for (const testCase of cases) {
    if (testCase.skip !== undefined) {
      record.skipped.push(`${testCase.name}: ${testCase.skip}`);
      it.skip(`${testCase.name} (${testCase.skip})`, () => {});
      continue;
    }
    record.tried += 1;
    it(testCase.name, () => {
      const context = make();
      try {
        runCase(testCase, context);
      } finally {
        context.device.close();
        context.other.close();
      }
      record.passed += 1;
    });
  }
}

describe("bad input catalogue on the mock", () => {
  runCatalogue("mock", () => {
    const backend = new MockBackend({ memorySize: 16 * 1024 * MIB });
    const open = (options: DeviceOptions) =>
      Device.open(typeof options === "object" && options !== null ? { backend, ...options } : options);
    return {
      device: open({}),
      other: Device.open({ backend: new MockBackend() }),
      open,
      backendCounters: () => backend.counters(),
      liveSets: () => backend.liveResidencySets.length,
    };
  });
});

describeOnHost("bad input catalogue", () => {
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
});

describe("the catalogue", () => {
  it("calls every method and getter of each class on a look-alike", () => {
    const named = new Set(lookAlikeCases().map(({ name }) => name));
    const dispose = String(Symbol.dispose);
    for (const [kind, members] of [
      ["Object.create(Device.prototype)", ["malloc", "free", "close", dispose, "closed", "native"]],
      [
        "a Proxy of a DeviceBuffer",
        ["contents", "bytes", "read", "write", "free", dispose, "length", "device"],
      ],
      ["a structuredClone of a MappedFile", ["contents", "free", dispose, "path", "length", "freed"]],
      ["a Proxy of a DeviceNative", ["handle", "residencySets", "backend", "hostVisible"]],
    ] as const) {
      for (const member of members) expect(named).toContain(`${member} on ${kind}`);
    }
  });

  it("has a bad value for every option Device.open declares", () => {
    const named = openCases(0).flatMap(([, options]) =>
      options instanceof Object ? Object.keys(options) : [],
    );
    expect(new Set(named)).toEqual(new Set(Object.keys(DEVICE_OPEN.fields)));
  });
});

describe("a file truncated after it was mapped", () => {
  const opens: [string, () => Device][] = [["mock", () => Device.open({ backend: new MockBackend() })]];
  if (hostAvailable) opens.push(["host", () => Device.open()]);
  // The mock read the file when it mapped it; the host's mapping is not read here (reading past the new end
  // would raise SIGBUS in this process: that is left to the child below).
  it.each(opens)("%s: release works and the accounts are right", (name, open) => {
    const path = scratch.write(`truncated-${name}.bin`, new Uint8Array(MIB).fill(1));
    const device = open();
    const before = device.counters().backend.mappedBytes;
    const file = device.mapFile(path);
    truncateSync(path, 100);
    expect(device.memoryStats().mapped).toBe(MIB);
    file.free();
    expect(device.memoryStats().mapped).toBe(0);
    expect(device.counters().backend.mappedBytes).toBe(before);
    device.close();
  });

  it.skipIf(!hostAvailable)(
    "host, in a child process: reading past the new end is SIGBUS (what mmap does; documented, not caught)",
    () => {
      const path = scratch.write("truncated-child.bin", new Uint8Array(MIB).fill(1));
      const result = runChild("truncate-child.mjs", { args: [path] });
      expect(result.stdout).toContain("mapped");
      expect(result.signal).toBe("SIGBUS");
    },
  );
});
