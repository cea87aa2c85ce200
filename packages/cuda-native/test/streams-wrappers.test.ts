// The CUDA backend's stream calls without a GPU: CudaBackend over the stand-in addon (fake-addon.ts) with
// stream handles in memory that log what reaches them. What runs here is the TypeScript side: which kind and
// options reach the addon's loadModule for each form of the `cuda` entry, that refused calls reach nothing,
// and that a platform without streams leaves newStream and loadModule absent. The GPU run (the stream
// contract in contract-cuda.test.ts, gpu/streams_probe.cc) covers the driver's side.
import type { KernelParameterKind } from "@nuvec/native-core";
import type { RawStreamCalls } from "@nuvec/native-core/addon";
import { ArgumentError, FormatError, StateError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import { CudaBackend, type CudaBufferHandle } from "../src/cuda.js";
import { fakeAddon } from "./fake-addon.js";

/** The stand-in with stream calls: each call that reaches a stream or module handle is logged. */
function withStreams(
  unavailable?: string,
  mapGranularity?: number,
  listed: readonly string[] | "unlisted" = [],
) {
  const fake = fakeAddon(mapGranularity === undefined ? {} : { mapGranularity });
  const log: string[] = [];
  // The device addresses each call reaches: a handle's pointer plus the offset the wrapper gave with it.
  const addresses: string[] = [];
  const at = (handle: unknown, offset = 0) =>
    `0x${((handle as { devicePointer: bigint }).devicePointer + BigInt(offset)).toString(16)}`;
  const kernelHandle = (name: string, parameters: readonly KernelParameterKind[]) => ({ name, parameters });
  const streamCalls: RawStreamCalls = {
    streamsUnavailable: () => unavailable,
    newStream: () => ({
      id: 1,
      released: false,
      launch: (kernel, grid, block, sharedBytes, args) => {
        log.push(`launch ${kernel.name} ${grid} ${block} ${sharedBytes} ${args.length}`);
        const pointers = args.filter((arg) => typeof arg === "object");
        addresses.push(
          `launch ${pointers.map((arg) => (Array.isArray(arg) ? at(arg[0], arg[1]) : at(arg))).join(" ")}`,
        );
      },
      write: (target, offset, source) => {
        log.push(`write ${offset} ${source.byteLength}`);
        addresses.push(`write ${at(target, offset)} ${source.byteLength}`);
      },
      read: async (source, offset, length) => {
        log.push(`read ${offset} ${length}`);
        addresses.push(`read ${at(source, offset)} ${length}`);
        return new Uint8Array(length);
      },
      copy: (target, targetOffset, source, sourceOffset, length) => {
        log.push(`copy ${targetOffset} ${sourceOffset} ${length}`);
        addresses.push(`copy ${at(target, targetOffset)} ${at(source, sourceOffset)} ${length}`);
      },
      record: () => {
        throw new Error("not in this stand-in");
      },
      wait: () => undefined,
      done: async () => undefined,
      synchronize: () => void log.push("synchronize"),
      release: () => void log.push("stream.release"),
    }),
    loadModule: (kind, text, options) => {
      log.push(`loadModule ${kind} ${text.length} ${JSON.stringify(options ?? null)}`);
      return {
        kernelNames: listed === "unlisted" ? undefined : listed,
        released: false,
        kernel: (name, parameters) => {
          log.push(`kernel ${name} ${parameters?.join(",")}`);
          return kernelHandle(name, parameters ?? []);
        },
        release: () => void log.push("module.release"),
      };
    },
  };
  Object.assign(fake.addon, streamCalls);
  return { backend: new CudaBackend(fake.addon, fake.facts), log, addresses };
}

describe("CudaBackend's streams over the raw addon (no GPU)", () => {
  it("each form of the cuda entry reaches loadModule as its kind, text and options", () => {
    const { backend, log } = withStreams();
    backend.loadModule!({ cuda: 'extern "C" __global__ void k() {}' });
    backend.loadModule!({ cuda: { source: "abc", options: ["-arch=sm_90", "--use_fast_math"] } });
    backend.loadModule!({ cuda: { ptx: ".version 8.0" }, host: "/ignored.so" });
    expect(log).toEqual([
      "loadModule cuda 33 null",
      'loadModule cuda 3 ["-arch=sm_90","--use_fast_math"]',
      "loadModule ptx 12 null",
    ]);
  });

  it("a source without a cuda entry is a FormatError, a malformed one an ArgumentError; nothing reaches the addon", () => {
    const { backend, log } = withStreams();
    const missing = thrown(() => backend.loadModule!({ host: "/lib.so", metal: "kernel void k() {}" }));
    expect(missing).toBeInstanceOf(FormatError);
    expect((missing as FormatError).code).toBe("ERR_NUVEC_MODULE");
    for (const cuda of [5, { source: "x", options: [1] }, { neither: true }, null]) {
      expect(thrown(() => backend.loadModule!({ cuda } as never))).toBeInstanceOf(ArgumentError);
    }
    expect(log).toEqual([]);
  });

  it("a launch whose arguments do not match the kernel reaches nothing; a matching one does", () => {
    const { backend, log } = withStreams();
    const module = backend.loadModule!({ cuda: "src" });
    const scale = module.kernel("scale", ["buffer", "f32", "u32"]);
    const stream = backend.newStream!();
    const buffer = backend.newBuffer(64);
    const shape = { grid: [1, 1, 1], block: [16, 1, 1], sharedBytes: 0 } as const;
    log.length = 0;
    const wrongCount = thrown(() => stream.launch(scale, shape, [{ kind: "buffer", buffer, offset: 0 }]));
    expect(wrongCount).toBeInstanceOf(ArgumentError);
    const wrongKind = thrown(() =>
      stream.launch(scale, shape, [
        { kind: "buffer", buffer, offset: 0 },
        { kind: "u32", value: 2 },
        { kind: "u32", value: 16 },
      ]),
    );
    expect(wrongKind).toBeInstanceOf(ArgumentError);
    expect(log).toEqual([]);
    stream.launch(scale, shape, [
      { kind: "buffer", buffer, offset: 0 },
      { kind: "f32", value: 2 },
      { kind: "u32", value: 16 },
    ]);
    stream.write(buffer, 8, new Uint8Array(16));
    expect(log).toEqual(["launch scale 1,1,1 16,1,1 0 3", "write 8 16"]);
  });

  it("a module whose driver cannot list its kernels (before CUDA 12.4) reports kernelNames undefined, one that can its list", () => {
    expect(
      withStreams(undefined, undefined, "unlisted").backend.loadModule!({ cuda: "src" }).kernelNames,
    ).toBe(undefined);
    expect(
      withStreams(undefined, undefined, ["b", "a"]).backend.loadModule!({ cuda: "src" }).kernelNames,
    ).toEqual(["b", "a"]);
    expect(withStreams().backend.loadModule!({ cuda: "src" }).kernelNames).toEqual([]);
  });

  it("a platform without streams: newStream and loadModule are absent", () => {
    const { backend } = withStreams("this CUDA driver lacks streams' entry points");
    expect([backend.newStream, backend.loadModule]).toEqual([undefined, undefined]);
  });
});

describe("CudaBackend's streams over the segments policy's buffers (no GPU)", () => {
  const GRANULE = 2 * 1024 * 1024;
  /** A small-pool segment, an expandable segment (an address space with one granule mapped) and ranges of both. */
  function segments() {
    const made = withStreams(undefined, GRANULE);
    const { backend } = made;
    const pointer = (buffer: { nativeHandle(): unknown }) =>
      (buffer.nativeHandle() as CudaBufferHandle).devicePointer;
    const small = backend.newBuffer(4 * 1024 * 1024);
    const space = backend.reserveAddressSpace(4 * GRANULE);
    backend.mapMemory(space, GRANULE, GRANULE);
    const block = backend.newBufferRange(small, 8192, 256);
    const large = backend.newBufferRange(space, GRANULE + 512, 1024);
    return { ...made, small, space, block, large, pointer };
  }
  const hex = (value: bigint) => `0x${value.toString(16)}`;
  const shape = { grid: [1, 1, 1], block: [64, 1, 1], sharedBytes: 0 } as const;

  it("a range reaches the addon as its segment's handle at the range's offset: the exact device address, for launches, writes, reads and copies", async () => {
    const { backend, addresses, small, space, block, large, pointer } = segments();
    const module = backend.loadModule!({ cuda: "src" });
    const add = module.kernel("add", ["buffer", "buffer", "buffer", "u32"]);
    const stream = backend.newStream!();
    const spaceAt = pointer(space);
    const smallAt = pointer(small);
    // nativeHandle() and what the stream passes agree: the segment's pointer plus the offset.
    expect([pointer(block), pointer(large)]).toEqual([smallAt + 8192n, spaceAt + BigInt(GRANULE + 512)]);
    stream.launch(add, shape, [
      { kind: "buffer", buffer: large, offset: 16 },
      { kind: "buffer", buffer: block, offset: 0 },
      { kind: "buffer", buffer: space, offset: GRANULE + 2048 },
      { kind: "u32", value: 4 },
    ]);
    stream.write(large, 1000, new Uint8Array(24));
    stream.write(block, 0, new Uint8Array(256));
    await stream.read(large, 4, 8);
    stream.copy(block, 128, large, 512, 128);
    stream.copy(space, GRANULE, small, 8192, 256);
    expect(addresses).toEqual([
      `launch ${hex(spaceAt + BigInt(GRANULE + 528))} ${hex(smallAt + 8192n)} ${hex(spaceAt + BigInt(GRANULE + 2048))}`,
      `write ${hex(spaceAt + BigInt(GRANULE + 1512))} 24`,
      `write ${hex(smallAt + 8192n)} 256`,
      `read ${hex(spaceAt + BigInt(GRANULE + 516))} 8`,
      `copy ${hex(smallAt + 8320n)} ${hex(spaceAt + BigInt(GRANULE + 1024))} 128`,
      `copy ${hex(spaceAt + BigInt(GRANULE))} ${hex(smallAt + 8192n)} 256`,
    ]);
  });

  it("refuses spans past a range's end, a released range, a released segment and another backend's range: nothing reaches the addon", () => {
    const { backend, addresses, small, block, large } = segments();
    const other = segments();
    const module = backend.loadModule!({ cuda: "src" });
    const scale = module.kernel("scale", ["buffer", "f32", "u32"]);
    const stream = backend.newStream!();
    const target = backend.newBuffer(4096);
    const launchAt = (buffer: typeof block, offset: number) => () =>
      stream.launch(scale, shape, [
        { kind: "buffer", buffer, offset },
        { kind: "f32", value: 2 },
        { kind: "u32", value: 1 },
      ]);
    const argumentErrors: Array<() => unknown> = [
      () => stream.write(large, 1020, new Uint8Array(8)),
      () => stream.write(block, 0, new Uint8Array(257)),
      () => stream.read(large, 1000, 25),
      () => stream.copy(block, 200, target, 0, 64),
      () => stream.copy(target, 0, large, 1000, 64),
      launchAt(large, 1025),
      () => stream.write(other.large, 0, new Uint8Array(4)),
      () => stream.copy(target, 0, other.block, 0, 4),
      launchAt(other.block, 0),
    ];
    for (const refused of argumentErrors) expect(thrown(refused)).toBeInstanceOf(ArgumentError);
    large.release();
    small.release(); // the segment's memory stays while its block lives, but the block is refused once it is released
    for (const refused of [
      () => stream.write(large, 0, new Uint8Array(4)),
      () => stream.read(large, 0, 4),
      () => stream.write(block, 0, new Uint8Array(4)),
      launchAt(block, 0),
      () => stream.copy(target, 0, large, 0, 4),
      launchAt(large, 0),
    ]) {
      const error = thrown(refused);
      expect(error).toBeInstanceOf(StateError);
      expect((error as StateError).code).toBe("ERR_NUVEC_RELEASED");
    }
    expect(addresses).toEqual([]);
  });
});
