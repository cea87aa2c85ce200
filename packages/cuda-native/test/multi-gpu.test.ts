// One Device per GPU: a Device on device 0 in this thread and one on device 1 in a worker thread (a thread
// opens one CUDA device), each with its own figures, blocks and device pointers on its own GPU. Runs only
// where the machine has two GPUs and the workspace is installed (the worker imports the built packages);
// skipped elsewhere, and in the bundle of gpu/run.sh (no node_modules there).
import { Worker } from "node:worker_threads";
import { Device } from "@nuvec/device";
import { describe, expect, it } from "vitest";
import { cudaBackend } from "./support.js";

const MIB = 1024 ** 2;

interface Report {
  ok: boolean;
  code?: string;
  message?: string;
  name?: string;
  ordinal?: number;
  policy?: string;
  intact?: boolean;
  active?: number;
}

function onDevice(device: number, bytes: number): Promise<Report> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./multi-gpu-worker.mjs", import.meta.url), {
      workerData: { device, bytes },
    });
    worker.once("message", (report: Report) => {
      resolve(report);
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

describe.runIf(cudaBackend !== undefined)("one Device per GPU", () => {
  it("device 1 in a worker beside device 0 here: each its own figures and pointers; a buffer of one refused by another Device", async (context) => {
    const second = await onDevice(1, 48 * MIB);
    if (!second.ok && second.code === "ERR_NUVEC_NATIVE_UNAVAILABLE") {
      context.skip(`one GPU only: ${second.message}`);
    }
    expect(second).toMatchObject({
      ok: true,
      ordinal: 1,
      policy: "segments",
      intact: true,
      active: 48 * MIB,
    });
    using first = Device.open({ backend: cudaBackend! });
    const buffer = first.malloc(8 * MIB);
    expect((first.native.handle(buffer) as { device: number }).device).toBe(0);
    expect(first.memoryStats().active).toBe(8 * MIB);
    using other = Device.open({ backend: cudaBackend! });
    expect(() => other.free(buffer)).toThrow(
      expect.objectContaining({ name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_BUFFER" }),
    );
    expect(first.memoryStats().active).toBe(8 * MIB);
    buffer.free();
  });
});
