// The bad input catalogue's cases: Device.open with each bad option, every entry point with every kind of bad
// value, misused buffers and mappings, closed devices and bad files, each with the error it must throw.
// Apart from the runner (bad-input.test.ts), which checks that each throws and changes nothing; the
// look-alike handles have their own file (bad-input-look-alikes.ts).
import { expect } from "vitest";
import { BAD_BYTE_COUNTS } from "../../../stats/test/bad-byte-counts.js";
import type { Device, DeviceBuffer, DeviceOptions, MappedFile } from "../../src/index.js";
import { lookAlikeCases } from "./bad-input-look-alikes.js";
import { type Case, type Context, direct, invalid, isRoot, MIB, paths, state } from "./bad-input-support.js";

/** Bad byte counts: the shared table and two more. `-0` is not among them: it is accepted (see below). */
const badByteCounts: ReadonlyArray<readonly [string, unknown]> = [
  ...BAD_BYTE_COUNTS,
  ["-2 ** 40", -(2 ** 40)],
  ["{ valueOf }", { valueOf: () => 1024 }],
];
/** Device.open with each bad option (every other option valid): [name, options, the error]. */
export function openCases(workingSet: number): [string, unknown, Record<string, unknown>][] {
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

/** Every case of the catalogue for a backend of `maxBufferLength` and `workingSet` (the look-alikes included). */
export function catalogue(maxBufferLength: number, workingSet: number): Case[] {
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
