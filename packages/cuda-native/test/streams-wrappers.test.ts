// The CUDA backend's stream calls without a GPU: CudaBackend over the stand-in addon (fake-addon.ts) with
// stream handles in memory that log what reaches them. What runs here is the TypeScript side: which kind and
// options reach the addon's loadModule for each form of the `cuda` entry, that refused calls reach nothing,
// and that a platform without streams leaves newStream and loadModule absent. The GPU run (the stream
// contract in contract-cuda.test.ts, gpu/streams_probe.cc) covers the driver's side.
import type { KernelParameterKind } from "@nuvec/native-core";
import type { RawStreamCalls } from "@nuvec/native-core/addon";
import { ArgumentError, FormatError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import { CudaBackend } from "../src/cuda.js";
import { fakeAddon } from "./fake-addon.js";

/** The stand-in with stream calls: each call that reaches a stream or module handle is logged. */
function withStreams(unavailable?: string) {
  const fake = fakeAddon();
  const log: string[] = [];
  const kernelHandle = (name: string, parameters: readonly KernelParameterKind[]) => ({ name, parameters });
  const streamCalls: RawStreamCalls = {
    streamsUnavailable: () => unavailable,
    newStream: () => ({
      id: 1,
      released: false,
      launch: (kernel, grid, block, sharedBytes, args) =>
        void log.push(`launch ${kernel.name} ${grid} ${block} ${sharedBytes} ${args.length}`),
      write: (_target, offset, source) => void log.push(`write ${offset} ${source.byteLength}`),
      read: async (_source, offset, length) => {
        log.push(`read ${offset} ${length}`);
        return new Uint8Array(length);
      },
      copy: (_target, targetOffset, _source, sourceOffset, length) =>
        void log.push(`copy ${targetOffset} ${sourceOffset} ${length}`),
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
        kernelNames: [],
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
  return { backend: new CudaBackend(fake.addon, fake.facts), log };
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

  it("a platform without streams: newStream and loadModule are absent", () => {
    const { backend } = withStreams("this CUDA driver lacks streams' entry points");
    expect([backend.newStream, backend.loadModule]).toEqual([undefined, undefined]);
  });
});
