// The mock's own behaviour: its options, fault injection, virtual files, call counts and the call log.
// What every backend must do is in @nuvec/native-core's test/contract.ts (run against the mock by test/contract-mock.test.ts).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NativeBackend } from "@nuvec/native-core";
import { ArgumentError, type OutOfMemoryError, SystemCallError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import {
  MOCK_DEFAULTS,
  MockBackend,
  type MockBackendOptions,
  MockBuffer,
  MockMappedFile,
  MockResidencySet,
} from "./mock.js";

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;
/** The injected or size-limited allocation failure, and use after release. */
const allocationFailed = expect.objectContaining({
  name: "OutOfMemoryError",
  code: "ERR_NUVEC_ALLOCATION_FAILED",
});
const released = expect.objectContaining({ name: "StateError", code: "ERR_NUVEC_RELEASED" });

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

describe("MockBackend virtual files and mapping faults", () => {
  it("maps a virtual file's bytes (copied when added, and by each mapping); writes never change the file", () => {
    const mock = new MockBackend({ pageSize: 4096 });
    const content = Uint8Array.from({ length: 5000 }, (_, index) => index % 251);
    mock.addFile("/models/a.safetensors", content);
    content[0] = 99; // the mock copied it
    const mapping = mock.mapFile("/models/a.safetensors");
    expect(mapping).toBeInstanceOf(MockMappedFile);
    expect(mapping.source).toBe("virtual");
    expect([mapping.length, mapping.mappedLength, mapping.allocatedSize]).toEqual([5000, 8192, 8192]);
    const view = new Uint8Array(mapping.contents());
    expect([view[0], view[4999]]).toEqual([0, 4999 % 251]);
    view.fill(7);
    const second = mock.mapFile("/models/a.safetensors");
    expect(new Uint8Array(second.contents())[0]).toBe(0);
    expect(mock.files).toEqual(["/models/a.safetensors"]);
    // Replaced, then removed: the mappings made keep their bytes.
    mock.addFile("/models/a.safetensors", Uint8Array.of(9, 9, 9));
    expect([mock.removeFile("/models/a.safetensors"), mock.removeFile("/models/a.safetensors")]).toEqual([
      true,
      false,
    ]);
    const kept = new Uint8Array(second.contents());
    expect([kept[1], kept[4999], mock.files.length]).toEqual([1, 4999 % 251, 0]);
  });

  it("a virtual file given by its length is zeros and needs no memory", () => {
    const mock = new MockBackend();
    mock.addFile("/models/huge.bin", 40 * GIB + 1);
    const mapping = mock.mapFile("/models/huge.bin");
    expect([mapping.mappedLength, mock.counters().mappedBytes]).toEqual([
      40 * GIB + 16_384,
      40 * GIB + 16_384,
    ]);
    expect(() => mapping.contents()).toThrow(allocationFailed);
    mock.addFile("/models/small.bin", 100);
    expect(new Uint8Array(mock.mapFile("/models/small.bin").contents())).toEqual(new Uint8Array(100));
  });

  it("an empty virtual file fails like an empty real one: mmap EINVAL", () => {
    const mock = new MockBackend();
    mock.addFile("/empty", 0);
    const error = thrown(() => mock.mapFile("/empty")) as SystemCallError;
    expect(error).toBeInstanceOf(SystemCallError);
    expect([error.syscall, error.errno, error.errnoNumber, error.path]).toEqual([
      "mmap",
      "EINVAL",
      22,
      "/empty",
    ]);
  });

  it("a virtual file shadows a real one; realFiles: false never touches the file system", () => {
    const thisFile = fileURLToPath(import.meta.url);
    const mock = new MockBackend();
    expect(mock.mapFile(thisFile).source).toBe("file");
    mock.addFile(thisFile, Uint8Array.of(1));
    expect(mock.mapFile(thisFile).length).toBe(1);
    const hermetic = new MockBackend({ realFiles: false });
    const error = thrown(() => hermetic.mapFile(thisFile)) as SystemCallError;
    expect([error.syscall, error.errno, error.path]).toEqual(["open", "ENOENT", thisFile]);
  });

  it("addFile checks its arguments", () => {
    const mock = new MockBackend();
    for (const [path, content] of [
      ["/a", -1],
      ["/a", 1.5],
      ["/a", "text"],
      [1, 1],
    ] as const) {
      expect(() => mock.addFile(path as string, content as number)).toThrow(ArgumentError);
    }
  });

  it("failMapping returning true makes a path fail (default mmap ENOMEM), changing no counter", () => {
    const mock = new MockBackend();
    mock.addFile("/a", 10);
    mock.addFile("/b", 10);
    mock.failMapping = (path) => path === "/a";
    const before = mock.counters();
    const error = thrown(() => mock.mapFile("/a")) as SystemCallError;
    expect(error).toBeInstanceOf(SystemCallError);
    expect([error.code, error.syscall, error.errno, error.errnoNumber, error.path]).toEqual([
      "ERR_NUVEC_SYSTEM",
      "mmap",
      "ENOMEM",
      12,
      "/a",
    ]);
    expect(mock.counters()).toEqual(before);
    expect(mock.mapFile("/b").length).toBe(10);
    mock.failMapping = (path) =>
      /\.safetensors$/.test(path) ? { syscall: "open", errno: "EACCES" } : undefined;
    const denied = thrown(() => mock.mapFile("/x.safetensors")) as SystemCallError;
    expect([denied.syscall, denied.errno, denied.errnoNumber]).toEqual(["open", "EACCES", 13]);
    expect(mock.mapFile("/a").length).toBe(10); // replaced the earlier fault
  });

  it("failMapping sees the path and the attempt number", () => {
    const seen: Array<[string, number]> = [];
    const mock = new MockBackend({
      failMapping: (path, attempt) => {
        seen.push([path, attempt]);
        return attempt === 2;
      },
    });
    mock.addFile("/a", 1);
    mock.mapFile("/a");
    expect(() => mock.mapFile("/a")).toThrow(SystemCallError);
    expect(() => mock.mapFile(5 as unknown as string)).toThrow(ArgumentError);
    mock.mapFile("/a");
    expect(seen).toEqual([
      ["/a", 1],
      ["/a", 2],
      ["/a", 3],
    ]);
  });
});

describe("MockResidencySet", () => {
  it("counts every call per set; the backend's counters sum commits and requests over sets", () => {
    const mock = new MockBackend();
    const first = mock.newResidencySet() as MockResidencySet;
    const second = mock.newResidencySet() as MockResidencySet;
    const buffer = mock.newBuffer(16_384);
    first.add(buffer);
    first.add(buffer);
    first.commit();
    first.requestResidency();
    first.remove(buffer);
    first.commit();
    first.endResidency();
    second.commit();
    second.requestResidency();
    second.requestResidency();
    expect(first.calls).toEqual({ adds: 2, removes: 1, commits: 2, residencyRequests: 1, residencyEnds: 1 });
    expect(second.calls).toEqual({ adds: 0, removes: 0, commits: 1, residencyRequests: 2, residencyEnds: 0 });
    const counters = mock.counters();
    expect([counters.commits, counters.residencyRequests, counters.residencySetsMade]).toEqual([3, 3, 2]);
    expect(mock.callCounts()["residencySet.add"]).toBe(2);
  });

  it("shows its state: wired bytes, request, pending changes, committed allocations", () => {
    const mock = new MockBackend();
    const set = mock.newResidencySet() as MockResidencySet;
    const buffer = mock.newBuffer(40_000);
    set.add(buffer);
    expect(set.hasUncommittedChanges).toBe(true);
    set.commit();
    expect(set.hasUncommittedChanges).toBe(false);
    expect(set.committedAllocations()).toEqual([buffer]);
    expect([set.residencyRequested, set.isWired(buffer), set.wiredBytes]).toEqual([false, false, 0]);
    set.requestResidency();
    expect([set.residencyRequested, set.isWired(buffer), set.wiredBytes]).toEqual([true, true, 49_152]);
    set.endResidency();
    expect([set.residencyRequested, set.isWired(buffer), set.wiredBytes]).toEqual([false, false, 0]);
  });

  it("two sets wiring one buffer each count it (per-set accounting, as the host layer's mlock)", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(16_384);
    for (const set of [mock.newResidencySet(), mock.newResidencySet()] as MockResidencySet[]) {
      set.add(buffer);
      set.commit();
      set.requestResidency();
    }
    expect(mock.counters().wiredBytes).toBe(2 * 16_384);
  });

  it("refuses allocations of another backend or anything else with ArgumentError", () => {
    const mock = new MockBackend();
    const other = new MockBackend();
    const set = mock.newResidencySet() as MockResidencySet;
    expect(() => set.add(other.newBuffer(10))).toThrow(ArgumentError);
    expect(() => set.remove(other.newBuffer(10))).toThrow(ArgumentError);
    expect(() => set.add({ length: 1, allocatedSize: 1 } as unknown as MockBuffer)).toThrow(ArgumentError);
    expect(() => mock.attachResidencySet(other.newResidencySet() as MockResidencySet)).toThrow(ArgumentError);
  });

  it("records attachments", () => {
    const mock = new MockBackend();
    const attached = mock.newResidencySet() as MockResidencySet;
    const alone = mock.newResidencySet() as MockResidencySet;
    mock.attachResidencySet(attached);
    mock.attachResidencySet(attached);
    expect([attached.attachments, alone.attachments]).toEqual([2, 0]);
    expect(mock.attachedResidencySets).toEqual([attached]);
    expect(mock.liveResidencySets).toEqual([attached, alone]);
    attached.release();
    expect(attached.attachments).toBe(2);
    expect(mock.attachedResidencySets).toEqual([]);
  });
});

describe("MockBackend fault injection: residency", () => {
  it("residencySetLimit = n: the first n sets are made, later ones are undefined", () => {
    const mock = new MockBackend();
    mock.residencySetLimit = 2;
    const sets = [1, 2, 3, 4].map(() => mock.newResidencySet());
    expect(sets.map((set) => set !== undefined)).toEqual([true, true, false, false]);
    expect(mock.counters().residencySetsMade).toBe(2);
    expect(mock.calls.map((call) => call.outcome)).toEqual(["ok", "ok", "failed", "failed"]);
    mock.residencySetLimit = undefined;
    expect(mock.newResidencySet()).toBeInstanceOf(MockResidencySet);
    // As an option; and a backend without residency sets makes none.
    expect(new MockBackend({ residencySetLimit: 0 }).newResidencySet()).toBeUndefined();
    const without = new MockBackend({ supportsResidencySets: false });
    expect([without.newResidencySet(), without.counters().residencySetsMade]).toEqual([undefined, 0]);
  });

  it("failWiring: true counts a failure per allocation, wires nothing, never throws; a later request retries", () => {
    const mock = new MockBackend({ failWiring: true });
    const set = mock.newResidencySet() as MockResidencySet;
    const buffers = [mock.newBuffer(16_384), mock.newBuffer(32_768)];
    for (const buffer of buffers) set.add(buffer);
    set.commit();
    const backend: NativeBackend = mock;
    expect(backend.lastWiringError).toBeUndefined();
    expect(() => set.requestResidency()).not.toThrow();
    expect(set.wiringFailures).toBe(2);
    expect(backend.lastWiringError).toMatch(/wiring \d+ bytes failed/);
    expect(mock.counters()).toMatchObject({ wiringFailures: 2, wiredBytes: 0 });
    mock.failWiring = false;
    set.requestResidency();
    expect(mock.counters()).toMatchObject({ wiringFailures: 2, wiredBytes: 49_152 });
  });

  it("a failWiring predicate fails some allocations, including ones added under a standing request", () => {
    const mock = new MockBackend();
    const set = mock.newResidencySet() as MockResidencySet;
    const good = mock.newBuffer(16_384);
    const bad = mock.newBuffer(16_384);
    mock.failWiring = (allocation) => allocation === bad;
    set.add(good);
    set.commit();
    set.requestResidency();
    set.add(bad);
    set.commit();
    expect([set.isWired(good), set.isWired(bad), set.wiringFailures, set.wiredBytes]).toEqual([
      true,
      false,
      1,
      16_384,
    ]);
  });

  it("clearFaults lifts every fault", () => {
    const mock = new MockBackend({
      failAllocation: () => true,
      failMapping: () => true,
      residencySetLimit: 0,
      failWiring: true,
    });
    mock.clearFaults();
    mock.addFile("/a", 1);
    const buffer = mock.newBuffer(16_384);
    mock.mapFile("/a");
    const set = mock.newResidencySet() as MockResidencySet;
    set.add(buffer);
    set.commit();
    set.requestResidency();
    expect(mock.counters()).toMatchObject({ wiringFailures: 0, wiredBytes: 16_384 });
  });
});

describe("MockBackend call log", () => {
  it("records every call with its target, argument and outcome", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(300);
    expect(() => mock.newBuffer(-5)).toThrow(ArgumentError);
    buffer.contents();
    expect(() => buffer.write(new Uint8Array(2), 299)).toThrow(ArgumentError);
    buffer.read(0, 300);
    const set = mock.newResidencySet() as MockResidencySet;
    set.add(buffer);
    buffer.release();
    expect(() => buffer.release()).toThrow(released);
    expect(
      mock.calls.map(({ sequence, call, target, argument, outcome, errorCode }) => [
        sequence,
        call,
        target,
        argument,
        outcome,
        errorCode,
      ]),
    ).toEqual([
      [1, "newBuffer", undefined, 300, "ok", undefined],
      [2, "newBuffer", undefined, -5, "rejected", "ERR_NUVEC_INVALID_ARGUMENT"],
      [3, "buffer.contents", "buffer#1", undefined, "ok", undefined],
      [4, "buffer.write", "buffer#1", undefined, "rejected", "ERR_NUVEC_INVALID_ARGUMENT"],
      [5, "buffer.read", "buffer#1", undefined, "ok", undefined],
      [6, "newResidencySet", "set#1", undefined, "ok", undefined],
      [7, "residencySet.add", "set#1", "buffer#1", "ok", undefined],
      [8, "buffer.release", "buffer#1", undefined, "ok", undefined],
      [9, "buffer.release", "buffer#1", undefined, "rejected", "ERR_NUVEC_RELEASED"],
    ]);
  });

  it("keeps the last callLogLimit calls (0 keeps none); clearCalls forgets them; totals and sequence go on", () => {
    const mock = new MockBackend({ callLogLimit: 3 });
    for (let index = 1; index <= 10; index += 1) mock.newBuffer(index);
    expect(mock.calls.map((call) => call.argument)).toEqual([8, 9, 10]);
    mock.clearCalls();
    expect(mock.calls).toEqual([]);
    mock.newBuffer(1);
    expect(mock.calls.map((call) => call.sequence)).toEqual([11]);
    expect(mock.callCounts().newBuffer).toBe(11);
    const silent = new MockBackend({ callLogLimit: 0 });
    silent.newBuffer(1);
    expect(silent.calls).toEqual([]);
    expect(silent.callCounts().newBuffer).toBe(1);
  });
});

describe("MockBackend.close and disposal", () => {
  it("releases every set, mapping and buffer, detaching views; later calls throw StateError", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(100);
    const view = new Uint8Array(buffer.contents());
    mock.addFile("/a", 10);
    const mapping = mock.mapFile("/a");
    const set = mock.newResidencySet() as MockResidencySet;
    set.add(buffer);
    set.commit();
    set.requestResidency();
    mock.close();
    mock.close();
    expect(mock.closed).toBe(true);
    expect([buffer.released, mapping.released, set.released, view.byteLength]).toEqual([true, true, true, 0]);
    expect(mock.counters()).toMatchObject({ bufferBytes: 0, mappedBytes: 0, wiredBytes: 0 });
    for (const call of [() => mock.newBuffer(1), () => mock.mapFile("/a"), () => mock.newResidencySet()]) {
      expect(call).toThrow(released);
    }
  });

  it("Symbol.dispose closes the backend", () => {
    const mock = new MockBackend();
    const buffer = mock.newBuffer(10);
    mock[Symbol.dispose]();
    expect([mock.closed, buffer.released]).toEqual([true, true]);
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
