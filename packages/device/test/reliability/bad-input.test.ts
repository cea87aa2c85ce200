// The bad input catalogue: every public entry point of the Device with every kind of bad value, misuse of
// buffers, mappings and closed devices, and bad files. Each case must throw the error it names (class, code,
// the argument it names) and leave memoryStats() and counters() of both devices, the backend's counters and
// its residency sets exactly as they were. `-0` is accepted as 0 everywhere a byte count is taken
// (@nuvec/stats' DECISIONS.md; src/schemas.test.ts). Runs on the mock and, when it loads, on the host backend.
import { chmodSync, mkdirSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../../stats/test/bad-byte-counts.js";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../../stats/test/thrown.js";
import {
  Device,
  DeviceBuffer,
  DeviceNative,
  type DeviceOptions,
  MappedFile,
  mapSafetensors,
} from "../../src/index.js";
import { DEVICE_OPEN } from "../../src/schemas.js";
import { describeOnHost, hostAvailable, hostBackend, runChild, sectionFigures } from "./support.js";

const MIB = 1024 ** 2;
const scratch = scratchFolder("nuvec-reliability-bad-input-");
const paths = {
  file: scratch.write("good.bin", new Uint8Array(3 * 4096 + 5).fill(9)),
  empty: scratch.write("empty.bin", ""),
  directory: join(scratch.folder, "directory"),
  unreadable: scratch.write("unreadable.bin", "secret"),
  missing: join(scratch.folder, "missing.bin"),
};
mkdirSync(paths.directory);
chmodSync(paths.unreadable, 0o000);
/** As root, chmod 000 does not stop reading: the unreadable-file case is skipped then. */
const isRoot = process.getuid?.() === 0;

const tally: Record<string, { tried: number; passed: number; skipped: string[] }> = {};
sectionFigures("bad-input", { backends: tally });

/** Bad byte counts: the shared table and two more. `-0` is not among them: it is accepted (see below). */
const badByteCounts: ReadonlyArray<readonly [string, unknown]> = [
  ...BAD_BYTE_COUNTS,
  ["-2 ** 40", -(2 ** 40)],
  ["{ valueOf }", { valueOf: () => 1024 }],
];

interface Context {
  device: Device;
  other: Device;
  open: (options: DeviceOptions) => Device;
}

interface Case {
  name: string;
  /** Sets up (must not throw) and returns the bad call, and the device to watch when not the context's. */
  act: (context: Context) => (() => unknown) | { device: Device; call: () => unknown };
  /** What the error must match: its class's name, its code, the argument it names. */
  error: Record<string, unknown>;
  skip?: string;
}

const invalid = (argument: string, code = "ERR_NUVEC_INVALID_ARGUMENT") => ({
  name: "ArgumentError",
  code,
  argument,
});
const state = (code: string) => ({ name: "StateError", code });
/** A case whose bad call needs no set-up. */
const direct =
  (call: (context: Context) => unknown): Case["act"] =>
  (context) =>
  () =>
    call(context);

/** The figures a refused call must leave as they were (after close: the last ones, which stay readable). */
function snapshot(device: Device): unknown {
  return { closed: device.closed, stats: device.memoryStats(), counters: device.counters() };
}

/** Device.open with each bad option (every other option valid): [name, options, the error]. */
function openCases(workingSet: number): [string, unknown, Record<string, unknown>][] {
  const cases: [string, unknown, Record<string, unknown>][] = [
    ["options null", null, invalid("options")],
    ["options number", 5, invalid("options")],
    ["options string", "fast", invalid("options")],
    [
      "wiredLimit above the working set",
      { wiredLimit: workingSet + 1 },
      invalid("wiredLimit", "ERR_NUVEC_WIRED_LIMIT"),
    ],
    ["policy: unknown", { policy: "lru" }, invalid("policy")],
    ["reserveRatio: below 1", { policy: "bounded", reserveRatio: 0.5 }, invalid("reserveRatio")],
    ["reserveRatio: NaN", { policy: "bounded", reserveRatio: Number.NaN }, invalid("reserveRatio")],
    // The runtime's Metal objects, where there is no Metal (the mock and the host).
    ["metal commandQueue off Metal", { metal: { commandQueue: 0x1000n } }, invalid("metal.commandQueue")],
    ["metal device off Metal", { metal: { device: 0x2000n } }, invalid("metal.device")],
    [
      "metal both off Metal",
      { metal: { commandQueue: 0x1000n, device: 0x2000n } },
      invalid("metal.commandQueue"),
    ],
    ["metal commandQueue: number", { metal: { commandQueue: 4096 } }, invalid("metal.commandQueue")],
    ["metal device: 0n", { metal: { device: 0n } }, invalid("metal.device")],
    ["metal: string", { metal: "queue" }, invalid("metal")],
    ["backend: a string", { backend: "mock" }, invalid("backend")],
    ["segments: blockRounding 3", { segments: { blockRounding: 3 } }, invalid("segments.blockRounding")],
    ["segments: a misspelt key", { segments: { smallSegmnet: 1 << 22 } }, invalid("segments.smallSegmnet")],
    ["boundedRelease: unknown", { boundedRelease: "smallest" }, invalid("boundedRelease")],
    ["safetyNet: a string", { safetyNet: "no" }, invalid("safetyNet")],
  ];
  for (const option of ["memoryLimit", "cacheLimit", "wiredLimit"]) {
    for (const [kind, value] of badByteCounts) {
      if (kind !== "undefined") cases.push([`${option}: ${kind}`, { [option]: value }, invalid(option)]);
    }
  }
  for (const [kind, value] of [
    ["0", 0],
    ["negative", -5],
    ["NaN", Number.NaN],
    ["string", "100"],
    ["2**31: past what a timer waits", 2 ** 31],
  ] as [string, unknown][]) {
    const argument = "residencyKeepAliveMilliseconds";
    cases.push([`${argument}: ${kind}`, { [argument]: value }, invalid(argument)]);
  }
  for (const value of ["5", -1, 101, 2.5, Number.NaN, null]) {
    const argument = "residencySetMaxPercent";
    cases.push([`${argument}: ${String(value)}`, { [argument]: value }, invalid(argument)]);
  }
  return cases;
}

function catalogue(maxBufferLength: number, workingSet: number): Case[] {
  const cases: Case[] = [];
  for (const entry of ["malloc", "setMemoryLimit", "setCacheLimit", "setWiredLimit"] as const) {
    for (const [kind, value] of badByteCounts) {
      cases.push({
        name: `${entry}(${kind})`,
        act: direct(({ device }) => device[entry](value as number)),
        error: invalid("bytes"),
      });
    }
  }
  // Any byte count is a valid memory or cache limit (as MLX), so only malloc refuses a large one.
  cases.push(
    {
      name: "malloc(above max buffer length)",
      act: direct(({ device }) => device.malloc(maxBufferLength + 1)),
      error: {
        ...invalid("bytes", "ERR_NUVEC_BUFFER_TOO_LARGE"),
        requested: maxBufferLength + 1,
        maximum: maxBufferLength,
      },
    },
    {
      name: "setWiredLimit(working set + 1)",
      act: direct(({ device }) => device.setWiredLimit(workingSet + 1)),
      error: invalid("bytes", "ERR_NUVEC_WIRED_LIMIT"),
    },
  );
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
      act: direct(({ device }) => device.startResidencyKeepAlive(value as number)),
      error: invalid("intervalMilliseconds"),
    });
  }
  for (const [name, options, error] of openCases(workingSet)) {
    // The message names the entry point, but for the segments' options (the allocator checks and names them).
    const where = String(error.argument).startsWith("segments.")
      ? {}
      : { message: expect.stringMatching(/^Device\.open\(\): /) };
    cases.push({
      name: `Device.open(${name})`,
      act: direct(({ open }) => open(options as DeviceOptions)),
      error: { ...error, ...where },
    });
  }
  // Buffers and mappings: freed, another device's, not one at all; deferred frees with a bad `after`.
  const on =
    <T>(setUp: (context: Context) => T, call: (held: T, device: Device) => unknown) =>
    (context: Context) => {
      const held = setUp(context);
      return () => call(held, context.device);
    };
  const buffer = ({ device }: Context) => device.malloc(1000);
  const file = ({ device }: Context) => device.mapFile(paths.file);
  const freed = <T extends { free(): void }>(held: T) => {
    held.free();
    return held;
  };
  const freedBuffer = (context: Context) => freed(buffer(context));
  const releasedFile = (context: Context) => freed(file(context));
  /** Freed after a promise (settled, but not yet seen: the case runs in the same turn). */
  const freedAfter = <T extends { free(options: { after: PromiseLike<unknown> }): void }>(held: T) => {
    held.free({ after: Promise.resolve() });
    return held;
  };
  const deferredFree = (context: Context) => freedAfter(buffer(context));
  const deferredRelease = (context: Context) => freedAfter(file(context));
  const bufferFreed = state("ERR_NUVEC_BUFFER_FREED");
  const mappingFreed = state("ERR_NUVEC_MAPPING_FREED");
  const foreign = invalid("handle", "ERR_NUVEC_FOREIGN_BUFFER");
  const misuse: [string, Case["act"], Record<string, unknown>][] = [
    ["double free", on(freedBuffer, (held) => held.free()), bufferFreed],
    ["contents() after free", on(freedBuffer, (held) => held.contents()), bufferFreed],
    ["read() after free", on(freedBuffer, (held) => held.read()), bufferFreed],
    ["write() after free", on(freedBuffer, (held) => held.write(new Uint8Array(1))), bufferFreed],
    ["read(-1, 1)", on(buffer, (held) => held.read(-1, 1)), invalid("offset")],
    ["read(996, 5): past the end", on(buffer, (held) => held.read(996, 5)), invalid("length")],
    ["read(0, -1)", on(buffer, (held) => held.read(0, -1)), invalid("length")],
    ["read(0, 0.5)", on(buffer, (held) => held.read(0, 0.5)), invalid("length")],
    [
      "bytes() after free",
      on(
        ({ device }) => freed(device.malloc(MIB)),
        (held) => held.bytes(),
      ),
      bufferFreed,
    ],
    ["device.free() after free", on(freedBuffer, (held, device) => device.free(held)), bufferFreed],
    ["nativeHandle() after free", on(freedBuffer, (held, device) => device.native.handle(held)), bufferFreed],
    [
      "free of another device's buffer",
      on(
        ({ other }) => other.malloc(1000),
        (held, device) => device.free(held),
      ),
      foreign,
    ],
    [
      "free() of another device's file",
      on(
        ({ other }) => other.mapFile(paths.file),
        (held, device) => device.free(held),
      ),
      foreign,
    ],
    ["free(undefined)", direct(({ device }) => device.free(undefined as never)), invalid("handle")],
    ["free({})", direct(({ device }) => device.free({} as never)), invalid("handle")],
    [
      "free(ArrayBuffer)",
      direct(({ device }) => device.free(new ArrayBuffer(8) as never)),
      invalid("handle"),
    ],
    ["free(null)", direct(({ device }) => device.free(null as never)), invalid("handle")],
    ["release twice", on(releasedFile, (held) => held.free()), mappingFreed],
    ["mapping contents() after release", on(releasedFile, (held) => held.contents()), mappingFreed],
    [
      "mapping nativeHandle() after release",
      on(releasedFile, (held, device) => device.native.handle(held)),
      mappingFreed,
    ],
    ["free(options: number)", on(buffer, (held) => held.free(5 as never)), invalid("options")],
    [
      "nativeHandle() after a deferred free",
      on(deferredFree, (held, device) => device.native.handle(held)),
      bufferFreed,
    ],
    ["contents() after a deferred free", on(deferredFree, (held) => held.contents()), bufferFreed],
    ["free() after a deferred free", on(deferredFree, (held) => held.free()), bufferFreed],
    [
      "mapping contents() after a deferred release",
      on(deferredRelease, (held) => held.contents()),
      mappingFreed,
    ],
    ["release() after a deferred release", on(deferredRelease, (held) => held.free()), mappingFreed],
  ];
  for (const [kind, source] of [
    ["a number", 12],
    ["a string", "abc"],
    ["an array", [1, 2]],
    ["undefined", undefined],
  ] as [string, unknown][]) {
    misuse.push([
      `write(${kind})`,
      on(buffer, (held) => held.write(source as Uint8Array)),
      invalid("source"),
    ]);
  }
  for (const [kind, after] of [
    ["number", 5],
    ["string", "later"],
    ["null", null],
    ["object without then", {}],
    // biome-ignore lint/suspicious/noThenProperty: a `then` that is not a function, refused on purpose
    ["non-function then", { then: 1 }],
    [
      "a then getter that throws",
      {
        // biome-ignore lint/suspicious/noThenProperty: a thenable whose then getter throws, on purpose
        get then(): never {
          throw new Error("then getter");
        },
      },
    ],
  ] as [string, unknown][]) {
    misuse.push(
      [`free({ after: ${kind} })`, on(buffer, (held) => held.free({ after } as never)), invalid("after")],
      [`release({ after: ${kind} })`, on(file, (held) => held.free({ after } as never)), invalid("after")],
    );
  }
  misuse.push([
    "free({ aftr })",
    on(buffer, (held) => held.free({ aftr: Promise.resolve() } as never)),
    invalid("aftr"),
  ]);
  for (const [name, act, error] of misuse) cases.push({ name, act, error });
  cases.push(...lookAlikeCases());
  // Paths and files.
  for (const [kind, value, error] of [
    ["undefined", undefined, invalid("path")],
    ["number", 5, invalid("path")],
    ["empty string", "", invalid("path")],
    ["NUL in the path", `${paths.file}\0x`, invalid("path")],
    ["missing file", paths.missing, { name: "SystemCallError", code: "ERR_NUVEC_SYSTEM", errno: "ENOENT" }],
    ["empty file", paths.empty, { name: "SystemCallError", code: "ERR_NUVEC_SYSTEM" }],
    ["directory", paths.directory, { name: "SystemCallError", code: "ERR_NUVEC_SYSTEM" }],
  ] as [string, unknown, Record<string, unknown>][]) {
    cases.push({
      name: `mapFile(${kind})`,
      act: direct(({ device }) => device.mapFile(value as string)),
      error,
    });
  }
  cases.push({
    name: "mapFile(unreadable file)",
    act: direct(({ device }) => device.mapFile(paths.unreadable)),
    error: { name: "SystemCallError", code: "ERR_NUVEC_SYSTEM" },
    ...(isRoot ? { skip: "running as root: chmod 000 does not stop root from reading" } : {}),
  });
  // After close: every operation on the device, its buffers and its mappings.
  const afterClose: [string, (device: Device, buffer: DeviceBuffer, file: MappedFile) => unknown][] = [
    ["malloc", (device) => device.malloc(100)],
    ["mapFile", (device) => device.mapFile(paths.file)],
    ["free", (device, buffer) => device.free(buffer)],
    ["buffer.free", (_device, buffer) => buffer.free()],
    ["buffer.contents", (_device, buffer) => buffer.contents()],
    ["buffer.read", (_device, buffer) => buffer.read()],
    ["buffer.write", (_device, buffer) => buffer.write(new Uint8Array(1))],
    ["nativeHandle", (device, buffer) => device.native.handle(buffer)],
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
      error: state("ERR_NUVEC_DEVICE_CLOSED"),
    });
  }
  return cases;
}

/**
 * Objects that pass `instanceof` but are no handle a Device made, of each class a Device user is handed:
 * `Object.create` of the prototype, a Proxy of a real one, a structuredClone of a real one (a plain object).
 */
function lookAlikesOf<T extends object>(
  noun: string,
  prototype: object,
  real: (context: Context) => T,
): [string, (context: Context) => unknown][] {
  return [
    [`Object.create(${noun}.prototype)`, () => Object.create(prototype)],
    [`a Proxy of a ${noun}`, (context) => new Proxy(real(context), {})],
    [`a structuredClone of a ${noun}`, (context) => structuredClone(real(context))],
  ];
}

/** Every method and getter of `prototype` (its own members, symbols too), each called on a given `this`. */
function membersOf(prototype: object): [string, (self: unknown) => unknown][] {
  return Reflect.ownKeys(prototype)
    .filter((key) => key !== "constructor")
    .map((key) => {
      const member = Object.getOwnPropertyDescriptor(prototype, key) as PropertyDescriptor;
      const call = (member.get ?? member.value) as (this: unknown) => unknown;
      return [String(key), (self: unknown) => call.call(self)];
    });
}

/**
 * Look-alike handles: every entry point that takes a buffer, a mapped file or a Device, and every method and
 * getter of those classes called on a look-alike `this`, refused with an ArgumentError naming the argument.
 */
function lookAlikeCases(): Case[] {
  const cases: Case[] = [];
  const buffers = lookAlikesOf("DeviceBuffer", DeviceBuffer.prototype, ({ device }) => device.malloc(1000));
  const files = lookAlikesOf("MappedFile", MappedFile.prototype, ({ device }) => device.mapFile(paths.file));
  const devices = lookAlikesOf("Device", Device.prototype, ({ device }) => device);
  const natives = lookAlikesOf("DeviceNative", DeviceNative.prototype, ({ device }) => device.native);
  const foreign = invalid("handle", "ERR_NUVEC_FOREIGN_BUFFER");
  const another: [string, (context: Context) => unknown][] = [
    ["another device's buffer", ({ other }) => other.malloc(1000)],
    ["another device's file", ({ other }) => other.mapFile(paths.file)],
  ];
  for (const [kind, make] of [...buffers, ...files]) {
    const act = (call: (held: unknown, device: Device) => unknown) => (context: Context) => {
      const held = make(context);
      return () => call(held, context.device);
    };
    cases.push(
      {
        name: `free(${kind})`,
        act: act((held, device) => device.free(held as never)),
        error: invalid("handle"),
      },
      {
        name: `native.handle(${kind})`,
        act: act((held, device) => device.native.handle(held as never)),
        error: invalid("target"),
      },
    );
  }
  for (const [kind, make] of another) {
    cases.push({
      name: `native.handle(${kind})`,
      act: (context) => {
        const held = make(context);
        return () => context.device.native.handle(held as never);
      },
      error: foreign,
    });
  }
  for (const [kind, make] of devices) {
    cases.push({
      name: `mapSafetensors(${kind})`,
      act: (context) => {
        const device = make(context);
        return () => mapSafetensors(device as never, paths.file);
      },
      error: invalid("device"),
    });
  }
  for (const [prototype, kinds] of [
    [DeviceBuffer.prototype, buffers],
    [MappedFile.prototype, files],
    [Device.prototype, devices],
    [DeviceNative.prototype, natives],
  ] as const) {
    for (const [member, call] of membersOf(prototype)) {
      for (const [kind, make] of kinds) {
        cases.push({
          name: `${member} on ${kind}`,
          act: (context) => {
            const self = make(context);
            return () => call(self);
          },
          error: {
            ...invalid("this"),
            message: expect.stringContaining("not an object that looks like one"),
          },
        });
      }
    }
  }
  return cases;
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
