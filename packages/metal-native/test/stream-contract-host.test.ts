// The stream contract (@nuvec/native-core/contract) against the host addon's streams: worker threads over
// real memory, with the standard kernels in a host module (test/native/stream_kernels.c, built here into a
// shared library with the C compiler). Then what only the host does: a kernel's failure, queued work that
// names a released buffer, and a process or worker that exits with work queued.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NativeKernelArgument, NativeStream } from "@nuvec/native-core";
import { describeStreamContract, elementsShape } from "@nuvec/native-core/contract";
import { ArgumentError, FormatError, StateError, SystemCallError } from "@nuvec/stats";
import { afterAll, describe, expect, it } from "vitest";
import type { AddonBuffer } from "../../native-core/src/addon/buffer.js";
import { AddonBufferRange } from "../../native-core/src/addon/buffer-range.js";
import { reportOf, runInChild } from "../../native-core/test/child.js";
import { openNativeBackendFile } from "../src/addon/loader.js";
import { loadNativeBackend } from "../src/index.js";

// NUVEC_CONTRACT_ADDON=<file.node> runs the contract against that addon file (a prebuilt binary), as
// contract-host.test.ts does.
const addonFile = process.env.NUVEC_CONTRACT_ADDON;
const openBackend = addonFile ? () => openNativeBackendFile(addonFile) : () => loadNativeBackend();

const here = fileURLToPath(new URL(".", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "nuvec-host-streams-"));
const cc = process.env.CC ?? "cc";

/** The kernels' library, built once for the file. */
function buildKernels(): string {
  const output = join(scratch, "stream_kernels.so");
  const build = spawnSync(
    cc,
    [
      "-shared",
      "-fPIC",
      "-O2",
      "-Wall",
      "-Wextra",
      "-Wno-unused-parameter",
      "-Werror",
      "-o",
      output,
      join(here, "native", "stream_kernels.c"),
    ],
    { encoding: "utf8" },
  );
  if (build.status !== 0) throw new Error(`${cc} failed: ${build.stderr}`);
  return output;
}

const linux = process.platform === "linux";
const kernelsPath = linux ? buildKernels() : "";
const notALibrary = join(scratch, "not-a-library.so");
writeFileSync(notALibrary, "this is text, not a shared library\n");

afterAll(() => {
  // The library stays: a module of it may be loaded until the process exits (nothing is dlclose'd early).
});

if (linux) {
  describeStreamContract(`host addon (worker threads)${addonFile ? ` from ${addonFile}` : ""}`, openBackend, {
    kernels: { host: kernelsPath },
    brokenModule: { host: notALibrary },
  });
}

// The standard kernels in Metal Shading Language, argument i at [[buffer(i)]]: the Metal layer's streams,
// compile-checked here, run only on a Mac (the macOS workflow).
const MSL_STANDARD_KERNELS = `
#include <metal_stdlib>
using namespace metal;
kernel void fill(device float* x [[buffer(0)]], constant float& value [[buffer(1)]], constant uint& n [[buffer(2)]],
                 uint i [[thread_position_in_grid]]) { if (i < n) x[i] = value; }
kernel void scale(device float* x [[buffer(0)]], constant float& factor [[buffer(1)]], constant uint& n [[buffer(2)]],
                  uint i [[thread_position_in_grid]]) { if (i < n) x[i] = x[i] * factor; }
kernel void add(device float* out [[buffer(0)]], device const float* a [[buffer(1)]], device const float* b [[buffer(2)]],
                constant uint& n [[buffer(3)]], uint i [[thread_position_in_grid]]) { if (i < n) out[i] = a[i] + b[i]; }
`;

if (process.platform === "darwin") {
  describeStreamContract(`Metal addon${addonFile ? ` from ${addonFile}` : ""}`, openBackend, {
    kernels: { metal: MSL_STANDARD_KERNELS },
    brokenModule: { metal: "kernel void broken( {" },
  });
}

const f32 = (value: number): NativeKernelArgument => ({ kind: "f32", value });
const u32 = (value: number): NativeKernelArgument => ({ kind: "u32", value });
const i32 = (value: number): NativeKernelArgument => ({ kind: "i32", value });

describe.runIf(linux)("host streams: what only the host does", () => {
  it("a kernel that fails rejects done() with its text, skips later work and keeps failing", async () => {
    const backend = loadNativeBackend();
    const stream = backend.newStream?.() as NativeStream;
    const module = backend.loadModule?.({ host: kernelsPath });
    const fail = module?.kernel("fail") as never;
    const fill = module?.kernel("fill") as never;
    const x = backend.newBuffer(16);
    stream.write(x, 0, new Uint8Array(16));
    stream.launch(fail, elementsShape(1), [i32(9)]);
    stream.launch(fill, elementsShape(4), [{ kind: "buffer", buffer: x, offset: 0 }, f32(1), u32(4)]);
    const error = await stream.done().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SystemCallError);
    expect(error).toMatchObject({
      code: "ERR_NUVEC_SYSTEM",
      syscall: "kernel fail",
      errno: "NUVEC_HOST_KERNEL_FAILED",
      errnoNumber: 9,
      message: "the host kernel fail failed (9): failed on purpose with 9",
    });
    await expect(stream.read(x, 0, 4)).rejects.toMatchObject({ errnoNumber: 9 });
    expect(() => stream.synchronize()).toThrow(SystemCallError);
    expect(() => stream.record().query()).toThrow("failed on purpose with 9");
    expect([...new Float32Array(x.contents())]).toEqual([0, 0, 0, 0]); // the fill after it never ran
    stream.release();
    module?.release();
    x.release();
  });

  it("counts a buffer released under queued work as quarantined until the work ran, then frees it", async () => {
    const backend = loadNativeBackend();
    const stream = backend.newStream?.() as NativeStream;
    const module = backend.loadModule?.({ host: kernelsPath });
    const sleep = module?.kernel("sleep") as never;
    // The host reports every figure: read them as numbers.
    const figures = () => backend.counters() as Required<ReturnType<typeof backend.counters>>;
    const before = figures();
    const x = backend.newBuffer(1 << 20);
    stream.launch(sleep, elementsShape(1), [u32(100)]);
    stream.write(x, 0, new Uint8Array(8).fill(3));
    x.release();
    const held = figures();
    expect(held.quarantinedAllocations - before.quarantinedAllocations).toBe(1);
    expect(held.quarantinedBytes - before.quarantinedBytes).toBe(x.allocatedSize);
    expect(held.buffersFreedByPlatform).toBe(before.buffersFreedByPlatform);
    expect(x.quarantinedBytes).toBe(x.allocatedSize);
    await stream.done();
    const after = figures();
    expect(after.quarantinedAllocations).toBe(before.quarantinedAllocations);
    expect(after.quarantinedBytes).toBe(before.quarantinedBytes);
    expect(after.buffersFreedByPlatform - before.buffersFreedByPlatform).toBe(1);
    expect(x.quarantinedBytes).toBe(0);
    stream.release();
    module?.release();
  });

  it("refuses a library without the table, and a missing file, with dlerror's text", () => {
    const backend = loadNativeBackend();
    const noTable = (() => {
      try {
        backend.loadModule?.({ host: "libm.so.6" });
      } catch (error) {
        return error;
      }
    })();
    expect(noTable).toBeInstanceOf(FormatError);
    expect((noTable as FormatError).log).toMatch(/nuvec_host_kernels/);
    expect(() => backend.loadModule?.({ host: join(scratch, "missing.so") })).toThrow(
      /cannot open shared object/,
    );
    expect(() => backend.loadModule?.({ cuda: "__global__ void k() {}" })).toThrow(FormatError);
  });

  it("the addon's stream classes cannot be made with new, and take only their own handles", () => {
    const addonPath = join(here, "..", "native", "build", "Release", "nuvec_metal_native.node");
    const addon = createRequire(import.meta.url)(addonPath) as Record<string, unknown>;
    for (const name of [
      "NativeStreamHandle",
      "NativeEventHandle",
      "NativeModuleHandle",
      "NativeKernelHandle",
    ]) {
      const Class = addon[name] as new (...args: unknown[]) => unknown;
      expect(() => new Class({}, 1, 2), name).toThrow(
        expect.objectContaining({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "this" }),
      );
    }
    const raw = addon as unknown as {
      newStream(): { launch(...args: unknown[]): void; wait(event: unknown): void; release(): void };
      NativeBufferHandle: new (bytes: number) => { release(): void };
    };
    const stream = raw.newStream();
    const x = new raw.NativeBufferHandle(16);
    expect(() => stream.launch({ name: "fill", parameters: ["buffer"] }, [1], [1], 0, [x])).toThrow(
      expect.objectContaining({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "kernel" }),
    );
    expect(() => stream.wait(x)).toThrow(
      expect.objectContaining({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "event" }),
    );
    stream.release();
    x.release();
  });

  it("the raw addon checks every launch argument again: each refusal enqueues nothing", async () => {
    const addonPath = join(here, "..", "native", "build", "Release", "nuvec_metal_native.node");
    const raw = createRequire(import.meta.url)(addonPath) as {
      newStream(): {
        launch(...args: unknown[]): void;
        write(...args: unknown[]): void;
        read(...args: unknown[]): Promise<Uint8Array>;
        copy(...args: unknown[]): void;
        done(): Promise<void>;
        release(): void;
      };
      loadModule(
        kind: string,
        text: string,
        options?: unknown,
      ): {
        kernel(name: string, parameters?: unknown): unknown;
        release(): void;
      };
      NativeBufferHandle: new (bytes: number) => { release(): void };
      NativeResidencySetHandle: new () => { release(): void };
    };
    const stream = raw.newStream();
    const module = raw.loadModule("host", kernelsPath);
    const fill = module.kernel("fill");
    const sleep = module.kernel("sleep");
    const x = new raw.NativeBufferHandle(16);
    const set = new raw.NativeResidencySetHandle();
    const grid = [1];
    const refusals: [string, () => unknown][] = [
      ["args not an array", () => stream.launch(fill, grid, grid, 0, "x")],
      ["too few", () => stream.launch(fill, grid, grid, 0, [x, 1])],
      ["a set as a buffer", () => stream.launch(fill, grid, grid, 0, [set, 1, 4])],
      ["a number as a buffer", () => stream.launch(fill, grid, grid, 0, [0x1000, 1, 4])],
      ["[buffer] without an offset", () => stream.launch(fill, grid, grid, 0, [[x], 1, 4])],
      ["an offset past the end", () => stream.launch(fill, grid, grid, 0, [[x, 17], 1, 4])],
      ["a negative offset", () => stream.launch(fill, grid, grid, 0, [[x, -4], 1, 4])],
      ["u32 of 2^32", () => stream.launch(fill, grid, grid, 0, [x, 1, 2 ** 32])],
      ["u32 of 1.5", () => stream.launch(fill, grid, grid, 0, [x, 1, 1.5])],
      ["f32 as a string", () => stream.launch(fill, grid, grid, 0, [x, "1", 4])],
      ["u32 as a bigint", () => stream.launch(sleep, grid, grid, 0, [1n])],
      ["no grid", () => stream.launch(fill, undefined, grid, 0, [x, 1, 4])],
      ["4 dimensions", () => stream.launch(fill, [1, 1, 1, 1], grid, 0, [x, 1, 4])],
      ["a zero block", () => stream.launch(fill, grid, [0], 0, [x, 1, 4])],
      ["a negative sharedBytes", () => stream.launch(fill, grid, grid, -1, [x, 1, 4])],
      ["a kernel that is a buffer", () => stream.launch(x, grid, grid, 0, [x, 1, 4])],
      ["a write past the end", () => stream.write(x, 8, new Uint8Array(9))],
      ["a write of a Float32Array", () => stream.write(x, 0, new Float32Array(1))],
      ["a read past the end", () => stream.read(x, 8, 9)],
      ["a copy past the end", () => stream.copy(x, 0, x, 4, 13)],
      ["parameters of a kind that is none", () => module.kernel("fill", ["buffer", "f16", "u32"])],
      ["a module kind that is none", () => raw.loadModule("opencl", "x")],
      ["a path with a NUL", () => raw.loadModule("host", "a\0b")],
    ];
    for (const [label, refused] of refusals) {
      expect(refused, label).toThrow(expect.objectContaining({ code: "ERR_NUVEC_INVALID_ARGUMENT" }));
    }
    const start = Date.now();
    await stream.done(); // nothing was enqueued: no sleep ran
    expect(Date.now() - start).toBeLessThan(1000);
    stream.release();
    module.release();
    set.release();
    x.release();
  });

  it("a stream collected with work queued drops what had not started; its pending read rejects", () => {
    const addonPath = join(here, "..", "native", "build", "Release", "nuvec_metal_native.node");
    const source = `
      import { createRequire } from "node:module";
      import { setImmediate as tick } from "node:timers/promises";
      const addon = createRequire(import.meta.url)(${JSON.stringify(addonPath)});
      const module = addon.loadModule("host", ${JSON.stringify(kernelsPath)});
      const x = new addon.NativeBufferHandle(64);
      let outcome = "pending";
      (() => {
        const stream = addon.newStream();
        for (let i = 0; i < 50; i += 1) stream.launch(module.kernel("sleep"), [1], [1], 0, [20]);
        stream.read(x, 0, 4).then(() => { outcome = "resolved"; }, (error) => { outcome = error.code + " " + error.errno + ": " + error.message; });
      })();
      const started = Date.now();
      for (let round = 0; round < 20 && outcome === "pending"; round += 1) { globalThis.gc(); await tick(); }
      x.release();
      const counters = addon.counters();
      console.log(JSON.stringify({ outcome, quick: Date.now() - started < 900, quarantined: counters.quarantinedBytes }));
    `;
    const outcome = runInChild(source, { nodeOptions: ["--expose-gc"] });
    expect(outcome.stderr).toBe("");
    expect(reportOf(outcome)).toEqual({
      outcome: "ERR_NUVEC_SYSTEM ECANCELED: stream 1 was released before this work ran",
      quick: true,
      quarantined: 0,
    });
  });

  it("the wrappers' methods refuse a look-alike this (Object.create of the prototype, a Proxy)", () => {
    const backend = loadNativeBackend();
    const stream = backend.newStream?.() as NativeStream;
    const module = backend.loadModule?.({ host: kernelsPath });
    const event = stream.record();
    const objects: [string, object, string[]][] = [
      [
        "stream",
        stream,
        ["launch", "write", "read", "copy", "record", "wait", "done", "synchronize", "release"],
      ],
      ["event", event, ["query", "done", "synchronize", "release"]],
      ["module", module as object, ["kernel", "release"]],
    ];
    for (const [label, real, methods] of objects) {
      const prototype = Object.getPrototypeOf(real) as Record<string, (...args: unknown[]) => unknown>;
      for (const fakeThis of [Object.create(prototype), new Proxy(real, {})]) {
        for (const method of methods) {
          expect(() => prototype[method]?.call(fakeThis), `${label}.${method}`).toThrow(
            expect.objectContaining({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "this" }),
          );
        }
      }
    }
    stream.release();
    module?.release();
  });

  it("takes a range made in TypeScript (CUDA's kind) as its segment from the range's offset", async () => {
    const backend = loadNativeBackend();
    const stream = backend.newStream?.() as NativeStream;
    const module = backend.loadModule?.({ host: kernelsPath });
    const scale = module?.kernel("scale", ["buffer", "f32", "u32"]) as never;
    const segment = backend.newBuffer(256) as never as AddonBuffer;
    const range = new AddonBufferRange(segment, 64, 32);
    stream.write(segment as never, 0, new Uint8Array(256));
    stream.write(range, 0, new Uint8Array(Float32Array.of(1, 2, 3, 4, 5, 6, 7, 8).buffer));
    stream.launch(scale, elementsShape(4), [{ kind: "buffer", buffer: range, offset: 16 }, f32(10), u32(4)]);
    const other = backend.newBuffer(32);
    stream.copy(other, 0, range, 0, 32);
    const expected = [1, 2, 3, 4, 50, 60, 70, 80];
    expect([...new Float32Array((await stream.read(range, 0, 32)).buffer)]).toEqual(expected);
    expect([...new Float32Array((await stream.read(other, 0, 32)).buffer)]).toEqual(expected);
    const whole = new Float32Array((await stream.read(segment as never, 0, 256)).buffer);
    expect([...whole.subarray(16, 24)]).toEqual(expected);
    expect(
      whole.subarray(0, 16).every((value) => value === 0) && whole.subarray(24).every((value) => value === 0),
    ).toBe(true);
    // Spans are the range's, not the segment's.
    expect(() => stream.write(range, 30, new Uint8Array(3))).toThrow(ArgumentError);
    expect(() => stream.read(range, 0, 33)).toThrow(ArgumentError);
    expect(() => stream.copy(other, 0, range, 8, 32)).toThrow(ArgumentError);
    expect(() =>
      stream.launch(scale, elementsShape(1), [{ kind: "buffer", buffer: range, offset: 33 }, f32(1), u32(1)]),
    ).toThrow(ArgumentError);
    range.release();
    expect(() => stream.read(range, 0, 4)).toThrow(StateError);
    stream.release();
    module?.release();
    other.release();
    (segment as never as { release(): void }).release();
  });

  it("a released stream refuses calls; its handle keeps its id", () => {
    const backend = loadNativeBackend();
    const stream = backend.newStream?.() as NativeStream;
    const id = stream.id;
    stream.release();
    expect(stream.id).toBe(id);
    expect(() => stream.synchronize()).toThrow(StateError);
  });

  it("exits a process and workers with work queued, a buffer released under it: no crash, no wait", () => {
    // The addon itself (the teardown is native): each thread queues 5 s of sleeps and a read, releases the
    // buffer and the module under them, and exits: a worker by process.exit(), one by terminate(), then the
    // process. The read's promise is left pending: nothing settles on the way out.
    const addonPath = join(here, "..", "native", "build", "Release", "nuvec_metal_native.node");
    const queue = `
      const addon = process.getBuiltinModule("node:module").createRequire(${JSON.stringify(addonPath)})(${JSON.stringify(addonPath)});
      const stream = addon.newStream();
      const module = addon.loadModule("host", ${JSON.stringify(kernelsPath)});
      const sleep = module.kernel("sleep");
      const x = new addon.NativeBufferHandle(1 << 20);
      for (let i = 0; i < 100; i += 1) {
        stream.launch(sleep, [1], [1], 0, [50]);
        stream.write(x, 0, new Uint8Array(64));
      }
      stream.read(x, 0, 8).then(() => {});
      x.release();
      module.release();`;
    const posted = `${queue}\nprocess.getBuiltinModule("node:worker_threads").parentPort.postMessage("queued");`;
    const finished = `${posted}\nprocess.exit(0);`;
    const lingering = `${posted}\nsetInterval(() => {}, 1000);`;
    const source = `
      import { Worker } from "node:worker_threads";
      const started = Date.now();
      const finished = new Worker(${JSON.stringify(finished)}, { eval: true });
      await new Promise((resolve) => finished.once("exit", resolve));
      const terminated = new Worker(${JSON.stringify(lingering)}, { eval: true });
      await new Promise((resolve) => terminated.once("message", resolve));
      await terminated.terminate();
      ${queue}
      console.log(JSON.stringify({ quick: Date.now() - started < 3000 }));
      process.exit(0);
    `;
    const outcome = runInChild(source);
    expect(outcome.stderr).toBe("");
    expect(reportOf(outcome)).toEqual({ quick: true });
  });
});
