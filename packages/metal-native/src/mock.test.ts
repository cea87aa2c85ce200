// The mock's own behaviour: its options and facts, its buffers and their fault injection, and its imports.
// Its virtual files, residency sets and call log have their own tests beside their sources (mock/files.test.ts,
// mock/residency-set.test.ts, mock/calls.test.ts). What every backend must do is in @nuvec/native-core's
// test/contract.ts (run against the mock by test/contract-mock.test.ts).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ArgumentError, type OutOfMemoryError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import { MOCK_DEFAULTS, MockBackend, type MockBackendOptions, MockBuffer } from "./mock.js";

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;
/** The injected or size-limited allocation failure. */
const allocationFailed = expect.objectContaining({
  name: "OutOfMemoryError",
  code: "ERR_NUVEC_ALLOCATION_FAILED",
});

describe("MockBackend facts", () => {
  it("default to a 16 GiB Apple silicon Mac, the facts MOCK_DEFAULTS states (in bytes)", () => {
    const mock = new MockBackend();
    const { callLogLimit, ...facts } = MOCK_DEFAULTS;
    expect(mock).toMatchObject({ ...facts, platform: "mock", realFiles: true });
    expect(callLogLimit).toBe(10_000);
    expect(Object.entries(facts)).toEqual([
      ["name", "Mock device (16 GiB)"],
      ["memorySize", 17_179_869_184],
      ["recommendedMaxWorkingSetSize", 12_884_901_888], // 3/4
      ["maxBufferLength", 8_589_934_592], // half
      ["resourceLimit", 499_000],
      ["pageSize", 16_384],
      ["supportsResidencySets", true],
      ["realMemoryUpTo", 16_777_216],
    ]);
  });

  it("derive the working set (3/4, whole pages) and max buffer length (half) from the memory size", () => {
    const mock = new MockBackend({ memorySize: 1_000_000_001, pageSize: 4096 });
    expect(mock.recommendedMaxWorkingSetSize).toBe(Math.floor(750_000_000.75 / 4096) * 4096);
    expect(mock.recommendedMaxWorkingSetSize % 4096).toBe(0);
    expect(mock.maxBufferLength).toBe(500_000_000);
    expect(mock.name).toBe("Mock device (0.93 GiB)");
  });

  it("are all settable", () => {
    const facts = {
      name: "Pretend M4 Max",
      memorySize: 128 * GIB,
      recommendedMaxWorkingSetSize: 100 * GIB,
      maxBufferLength: 64 * GIB,
      resourceLimit: 1000,
      pageSize: 4096,
      supportsResidencySets: false,
    };
    expect(new MockBackend(facts)).toMatchObject(facts);
  });

  it.each([
    ["pageSize", { pageSize: 3000 }],
    ["pageSize", { pageSize: 0 }],
    ["memorySize", { memorySize: -1 }],
    ["memorySize", { memorySize: 1.5 }],
    ["maxBufferLength", { maxBufferLength: Number.NaN }],
    ["resourceLimit", { resourceLimit: 0 }],
    ["recommendedMaxWorkingSetSize", { recommendedMaxWorkingSetSize: Number.POSITIVE_INFINITY }],
    ["realMemoryUpTo", { realMemoryUpTo: -1 }],
    ["callLogLimit", { callLogLimit: 0.5 }],
    ["name", { name: "" }],
    ["supportsResidencySets", { supportsResidencySets: "yes" as unknown as boolean }],
  ])("a bad %s option throws ArgumentError naming it", (argument, options) => {
    const error = thrown(() => new MockBackend(options));
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).argument).toBe(argument);
  });

  // Each message states the option's whole rule: the largest page and granularity is 2^30.
  it.each<[string, unknown, string]>([
    [
      "pageSize",
      { pageSize: 2 ** 31 },
      "pageSize must be a power of two from 1 to 2^30 (1073741824), got 2147483648",
    ],
    [
      "pageSize",
      { pageSize: "4096" },
      'pageSize must be a power of two from 1 to 2^30 (1073741824), got "4096"',
    ],
    [
      "mapGranularity",
      { mapGranularity: 2 ** 31 },
      "mapGranularity must be a power of two from 1 to 2^30 (1073741824), got 2147483648",
    ],
    ["realFiles", { realFiles: "no" }, 'realFiles must be a boolean, got "no"'],
    ["failAllocation", { failAllocation: true }, "failAllocation must be a function, got true"],
    ["failMapping", { failMapping: "x" }, 'failMapping must be a function, got "x"'],
    ["failWiring", { failWiring: 1 }, "failWiring must be a boolean or a function, got 1"],
    [
      "residencySetLimit",
      { residencySetLimit: -1 },
      "residencySetLimit must be a non-negative safe integer, got -1",
    ],
    [
      "residencySetLimit",
      { residencySetLimit: 1.5 },
      "residencySetLimit must be a non-negative safe integer, got 1.5",
    ],
    ["options", null, "options must be an object, got null"],
    [
      "mapGranularity",
      { mapGranularity: 1 },
      "mapGranularity must be a power of two from pageSize (16384) to maxBufferLength (8589934592), got 1",
    ],
    [
      "mapGranularity",
      { mapGranularity: 2 ** 30, maxBufferLength: 2 ** 29 },
      "mapGranularity must be a power of two from pageSize (16384) to maxBufferLength (536870912), got 1073741824",
    ],
    [
      "mapGranularty",
      { mapGranularty: 2 ** 21 },
      "new MockBackend(): unknown option mapGranularty (the options are name, memorySize, recommendedMaxWorkingSetSize, maxBufferLength, resourceLimit, pageSize, supportsResidencySets, realMemoryUpTo, realFiles, callLogLimit, failAllocation, failMapping, residencySetLimit, failWiring, mapGranularity, streams)",
    ],
  ])("a bad %s option is refused with the rule it breaks (%j)", (argument, options, message) => {
    const error = thrown(() => new MockBackend(options as MockBackendOptions));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error).toMatchObject({ argument, message });
  });

  it("reads each option once: a getter that changes its answer cannot pass one value to the check and use another", () => {
    let reads = 0;
    const options = {
      get realFiles() {
        reads += 1;
        return reads === 1 ? false : ("yes" as unknown as boolean);
      },
    };
    expect(new MockBackend(options).realFiles).toBe(false);
    expect(reads).toBe(1);
  });

  it("takes the largest page and granularity, 2^30", () => {
    const mock = new MockBackend({ pageSize: 2 ** 30, mapGranularity: 2 ** 30, memorySize: 2 ** 31 });
    expect([mock.pageSize, mock.mapGranularity]).toEqual([2 ** 30, 2 ** 30]);
  });
});

describe("MockBackend buffers", () => {
  it("allocatedSize is the length below a page, whole pages from a page on", () => {
    const mock = new MockBackend({ pageSize: 16_384 });
    const sizes = [1, 16_383, 16_384, 16_385].map((bytes) => mock.newBuffer(bytes).allocatedSize);
    expect(sizes).toEqual([1, 16_383, 16_384, 32_768]);
  });

  it("large buffers need no memory; their contents(), read and write throw OutOfMemoryError naming realMemoryUpTo", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(mock.maxBufferLength);
    expect(buffer).toBeInstanceOf(MockBuffer);
    expect([buffer.allocatedSize, mock.counters().bufferBytes]).toEqual([8 * GIB, 8 * GIB]);
    for (const call of [
      () => buffer.contents(),
      () => buffer.read(0, 1),
      () => buffer.write(new Uint8Array(1)),
    ]) {
      const error = thrown(call);
      expect(error).toEqual(allocationFailed);
      expect(error).toMatchObject({ requested: 8 * GIB, message: expect.stringMatching(/realMemoryUpTo/) });
    }
    expect(buffer.hasMemory).toBe(false);
    buffer.release();
    expect(mock.counters().bufferBytes).toBe(0);
  });

  it("gives real memory up to realMemoryUpTo exactly", () => {
    const mock = new MockBackend({ realMemoryUpTo: 64 * KIB });
    expect(mock.newBuffer(64 * KIB).contents().byteLength).toBe(64 * KIB);
    expect(() => mock.newBuffer(64 * KIB + 1).contents()).toThrow(allocationFailed);
    const everything = new MockBackend({ realMemoryUpTo: Number.POSITIVE_INFINITY });
    expect(everything.newBuffer(32 * MIB).contents().byteLength).toBe(32 * MIB);
    const nothing = new MockBackend({ realMemoryUpTo: 0 });
    expect(() => nothing.newBuffer(1).contents()).toThrow(allocationFailed);
  });

  it("makes memory lazily, zero-filled, the same ArrayBuffer until detached", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(1000);
    expect(buffer.hasMemory).toBe(false);
    const memory = buffer.contents();
    expect(buffer.hasMemory).toBe(true);
    expect(new Uint8Array(memory).every((byte) => byte === 0)).toBe(true);
    expect(buffer.contents()).toBe(memory);
    buffer.detachContents();
    expect(buffer.detachments).toBe(1);
    const next = buffer.contents();
    expect(next).not.toBe(memory);
    expect(memory.byteLength).toBe(0);
    buffer.release();
    expect(buffer.detachments).toBe(2);
    expect(next.byteLength).toBe(0);
  });

  it("read and write hand out no view: nothing for detachContents or release to detach", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(1000);
    expect(buffer.read(0, 4)).toEqual(new Uint8Array(4));
    expect(buffer.hasMemory).toBe(false); // zeros need no memory
    buffer.write(Uint8Array.of(1, 2), 998);
    expect(buffer.hasMemory).toBe(true);
    buffer.detachContents();
    expect([buffer.detachments, mock.callCounts()["buffer.contents"]]).toEqual([0, 0]);
    // A view handed out sees the writes; a write past a shorter view widens the memory, detaching that view
    // (the mock keeps one view length at a time), and byte 999, past the view, was dropped with it.
    const view = new Uint8Array(buffer.contents(999));
    buffer.write(Uint8Array.of(7), 0);
    expect(view[0]).toBe(7);
    buffer.write(view.subarray(998, 999), 999);
    expect(view.byteLength).toBe(0);
    expect([...buffer.read(997, 3)]).toEqual([0, 1, 1]);
    buffer.release();
    expect(buffer.detachments).toBe(0);
    const range = mock.newBufferRange(mock.newBuffer(64), 16, 8);
    range.write(Uint8Array.of(5), 7);
    range.detachContents();
    expect([...range.read(6, 2)]).toEqual([0, 5]);
    expect(range.contents().byteLength).toBe(8);
  });

  it("lists the live buffers, ids in order", () => {
    const mock = new MockBackend();
    const first = mock.newBuffer(10);
    const second = mock.newBuffer(20);
    expect(mock.liveBuffers).toEqual([first, second]);
    expect([first.id, second.id, first.label]).toEqual([1, 2, "buffer#1"]);
    first.release();
    expect(mock.liveBuffers).toEqual([second]);
  });
});

describe("MockBackend fault injection: buffers", () => {
  it("failAllocation fails the n-th valid newBuffer only, changing no counter", () => {
    const mock = new MockBackend();
    mock.failAllocation = (_bytes, attempt) => attempt === 2;
    mock.newBuffer(100);
    const before = mock.counters();
    const error = thrown(() => mock.newBuffer(200));
    expect(error).toEqual(allocationFailed);
    expect((error as OutOfMemoryError).requested).toBe(200);
    expect(mock.counters()).toEqual(before);
    expect(mock.newBuffer(200).length).toBe(200);
    expect(mock.bufferAttempts).toBe(3);
    expect(mock.calls.map((call) => call.outcome)).toEqual(["ok", "failed", "ok"]);
    expect(mock.calls[1]?.errorCode).toBe("ERR_NUVEC_ALLOCATION_FAILED");
  });

  it("rejected sizes are not attempts: failing attempt bufferAttempts + 1 fails the next valid call", () => {
    const mock = new MockBackend();
    mock.newBuffer(1);
    const next = mock.bufferAttempts + 1;
    mock.failAllocation = (_bytes, attempt) => attempt === next;
    expect(() => mock.newBuffer(-1)).toThrow(ArgumentError);
    expect(() => mock.newBuffer(5)).toThrow(allocationFailed);
    expect(() => mock.newBuffer(5)).not.toThrow();
  });

  it("failAllocation decides by size and attempt, and stays in force until lifted", () => {
    const seen: Array<[number, number]> = [];
    const mock = new MockBackend({
      failAllocation: (bytes, attempt) => {
        seen.push([bytes, attempt]);
        return bytes > GIB;
      },
    });
    mock.newBuffer(MIB);
    expect(() => mock.newBuffer(2 * GIB)).toThrow(allocationFailed);
    expect(() => mock.newBuffer(3 * GIB)).toThrow(allocationFailed);
    mock.failAllocation = undefined;
    mock.newBuffer(2 * GIB);
    expect(seen).toEqual([
      [MIB, 1],
      [2 * GIB, 2],
      [3 * GIB, 3],
    ]);
    expect(mock.counters().buffersMade).toBe(2);
  });
});

describe("the mock's imports", () => {
  it("are types, errors, argument checks, facts, ranges, @nuvec/stats and its own files only: no native addon, no static node: import", () => {
    const source = dirname(fileURLToPath(import.meta.url));
    const files = [
      join(source, "mock.ts"),
      ...readdirSync(join(source, "mock"))
        .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
        .map((file) => join(source, "mock", file)),
    ];
    let checked = 0;
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+"([^"]+)"/gms)].map(
        (match) => match[1] as string,
      );
      for (const specifier of specifiers) {
        expect(
          // @nuvec/native-core's root entry: the types, errors, argument checks and facts (not ./addon).
          ["@nuvec/native-core", "@nuvec/stats"].includes(specifier) ||
            /^\.\/(mock\/)?[a-z-]+\.js$/.test(specifier),
          `${file} imports ${specifier}`,
        ).toBe(true);
        expect(specifier).not.toMatch(/^node:|index|binding|loader/);
        checked += 1;
      }
      expect(text).not.toMatch(/\brequire\(/);
    }
    expect(files.length).toBeGreaterThanOrEqual(7);
    expect(checked).toBeGreaterThanOrEqual(20);
  });
});
