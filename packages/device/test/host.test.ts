// The Device on the real host backend (Linux): real memory behind buffers, real wiring (mlock) seen in
// the kernel's VmLck, files mapped without a copy. Skips where the host backend is not the default.
import { randomFillSync } from "node:crypto";
import { Worker } from "node:worker_threads";
import { replayTrace } from "@nuvec/allocator";
import { expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { thrown } from "../../stats/test/thrown.js";
import { Device, OutOfMemoryError } from "../src/index.js";
import { collectUntil, describeOnHost, procStatus as status, transfer } from "./reliability/support.js";

const MIB = 1024 ** 2;
const scratch = scratchFolder("nuvec-device-host-");

describeOnHost("Device", () => {
  it.each(["exits", "is terminated"])(
    "gives back the memory of views moved into a worker once the worker %s (RSS, the backend's bytes)",
    async (ending) => {
      const settle = () => collectUntil(() => false, 10);
      const device = Device.open();
      const backendFigures = () => {
        const counters = device.native.backend.counters();
        return {
          quarantined: counters.quarantinedBytes,
          abandoned: counters.abandonedBytes,
          live: counters.bufferBytes,
        };
      };
      await settle();
      const before = { figures: backendFigures(), resident: status("RssAnon") };
      // The worker keeps every view it receives, and writes to it, so that its pages are resident.
      const worker = new Worker(
        `const { parentPort } = require("node:worker_threads");
       const kept = [];
       parentPort.on("message", (view) => {
         if (view === "exit") process.exit(0);
         new Uint8Array(view).fill(9);
         kept.push(view);
         parentPort.postMessage(kept.length);
       });`,
        { eval: true },
      );
      for (let index = 0; index < 8; index += 1) {
        const buffer = device.malloc(32 * MIB);
        buffer.bytes().fill(1);
        const moved = transfer(buffer.contents());
        worker.postMessage(moved, [moved]);
        buffer.free();
        await new Promise((resolve) => worker.once("message", resolve));
      }
      expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, quarantined: 256 * MIB });
      expect(status("RssAnon") - before.resident).toBeGreaterThan(200 * MIB);
      const exited = new Promise((resolve) => worker.once("exit", resolve));
      if (ending === "exits") worker.postMessage("exit");
      else await worker.terminate();
      await exited;
      await settle();
      // Exact where the figures are ours; RSS within what V8 and malloc move on their own.
      expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, quarantined: 0 });
      expect(backendFigures()).toEqual(before.figures);
      expect(status("RssAnon") - before.resident).toBeLessThan(32 * MIB);
      device.close();
    },
  );

  it("counts buffers whose view was moved away in quarantined and against the memory limit, until the view is collected", async () => {
    const device = Device.open({ memoryLimit: 16 * MIB });
    device.startTrace("quarantine");
    const backendBefore = device.native.backend.counters().quarantinedBytes ?? Number.NaN;
    let moved: ArrayBuffer[] = [];
    for (let index = 0; index < 16; index += 1) {
      const buffer = device.malloc(MIB);
      buffer.bytes().fill(index);
      moved.push(transfer(buffer.contents()));
      buffer.free();
      expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, quarantined: (index + 1) * MIB });
    }
    expect((device.native.backend.counters().quarantinedBytes ?? Number.NaN) - backendBefore).toBe(16 * MIB);
    // Past the limit by what is quarantined alone: the typed refusal names it, and nothing changes.
    const stats = device.memoryStats();
    const counters = device.counters();
    const refusal = thrown(() => device.malloc(1));
    expect(refusal).toBeInstanceOf(OutOfMemoryError);
    expect(refusal).toMatchObject({ active: 0, mapped: 0, quarantined: 16 * MIB, limit: 16 * MIB });
    expect((refusal as Error).message).toContain(`${16 * MIB} quarantined`);
    expect(device.memoryStats()).toEqual(stats);
    expect(device.counters()).toEqual({ ...counters, outOfMemoryRefusals: counters.outOfMemoryRefusals + 1 });
    // The moved views still read their own bytes (the memory was never reused).
    expect(moved.map((view) => new Uint8Array(view)[MIB - 1])).toEqual(
      Array.from({ length: 16 }, (_, i) => i),
    );
    // Collected: the backend gives the memory back, and the figure and the room follow.
    moved = [];
    await collectUntil(() => device.memoryStats().quarantined === 0);
    expect(device.memoryStats()).toMatchObject({ active: 0, quarantined: 0 });
    expect((device.native.backend.counters().quarantinedBytes ?? Number.NaN) - backendBefore).toBe(0);
    // The trace says what happened: 16 quarantines, then 16 give-backs; replayed, the same refusal.
    const trace = device.stopTrace();
    const tags = trace.events.map((event) => event[0]).join("");
    expect(tags).toBe(`${"aq".repeat(16)}${"r".repeat(16)}`);
    const replayed = replayTrace(trace.events.slice(0, 32), { memoryLimit: 16 * MIB });
    expect(replayed.stats).toMatchObject({ active: 0, cache: 0, quarantined: 16 * MIB });
    expect(() =>
      replayTrace([...trace.events.slice(0, 32), ["a", 16, 1]], { memoryLimit: 16 * MIB }),
    ).toThrow(OutOfMemoryError);
    device.malloc(16 * MIB).free();
    device.close();
  });

  it("counts a mapped file whose view was moved away in quarantined once freed, until the view is collected", async () => {
    const path = scratch.write("moved-mapping.bin", new Uint8Array(3 * 4096 + 5).fill(0x5a));
    const device = Device.open();
    const file = device.mapFile(path);
    let moved: ArrayBuffer | undefined = transfer(file.contents());
    file.free();
    const mappedLength = 4 * device.native.backend.pageSize;
    expect(device.memoryStats()).toMatchObject({ mapped: 0, quarantined: mappedLength });
    expect(new Uint8Array(moved).every((byte) => byte === 0x5a)).toBe(true);
    moved = undefined;
    await collectUntil(() => device.memoryStats().quarantined === 0);
    expect(device.memoryStats()).toMatchObject({ mapped: 0, quarantined: 0 });
    device.close();
  });

  it("keeps what it holds for views constant over 1,000 and 100,000 views made in one job (counts, not time)", () => {
    const device = Device.open();
    const backend = device.native.backend as { viewBookkeeping?: () => Record<string, number> };
    const loop = (count: number, body: (buffer: ReturnType<typeof device.malloc>) => void) => {
      for (let index = 0; index < count; index += 1) {
        const buffer = device.malloc(64 * 1024);
        body(buffer);
        buffer.free();
      }
    };
    const kept = () => backend.viewBookkeeping?.();
    expect(kept()).toBeDefined();
    for (const body of [
      (buffer: ReturnType<typeof device.malloc>) => buffer.contents(),
      (buffer: ReturnType<typeof device.malloc>) => buffer.bytes(),
      (buffer: ReturnType<typeof device.malloc>) => buffer.read(0, 64),
      (buffer: ReturnType<typeof device.malloc>) => buffer.write(new Uint8Array(64)),
    ]) {
      loop(1_000, body);
      const afterThousand = kept();
      loop(100_000, body);
      expect(kept()).toEqual(afterThousand);
    }
    // The buffer cached at the end keeps its list of views (emptied); nothing is on record.
    expect(kept()).toMatchObject({ records: 0, listed: 0 });
    device.close();
  });

  it("survives a worker terminated in a loop of views while it holds views and has moved one out; the moved one's memory goes when dropped", async () => {
    const device = Device.open();
    const abandoned = () => device.native.backend.counters().abandonedBytes ?? 0;
    const before = abandoned();
    const worker = new Worker(
      `const { parentPort } = require("node:worker_threads");
       const { setFlagsFromString } = require("node:v8");
       const { runInNewContext } = require("node:vm");
       setFlagsFromString("--harmony-rab-gsab-transfer");
       const transfer = runInNewContext("ArrayBuffer.prototype.transfer");
       import(${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)}).then(({ Device }) => {
         const device = Device.open();
         const held = [];
         for (let index = 0; index < 16; index += 1) held.push(device.malloc(1024 * 1024).bytes().fill(index));
         const out = device.malloc(4 * 1024 * 1024);
         out.bytes().fill(7);
         const moved = transfer.call(out.contents());
         out.free();
         parentPort.postMessage(moved, [moved]);
         for (;;) { const buffer = device.malloc(64 * 1024); buffer.bytes()[0] = 1; buffer.free(); }
       });`,
      { eval: true },
    );
    let moved: Uint8Array | undefined = new Uint8Array(
      await new Promise<ArrayBuffer>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      }),
    );
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    await worker.terminate();
    await exited;
    const mechanism = (device.native.backend as { viewMechanism?: string }).viewMechanism;
    // The moved view outlives the worker: its memory is held, counted, and still the worker's bytes. With
    // Node-API views, the buffer whose view was made in the job the worker was terminated in may be in doubt
    // too (held, counted): backing stores tell exactly.
    const held = abandoned() - before;
    expect(mechanism === "backing-store" ? [4 * MIB] : [4 * MIB, 4 * MIB + 64 * 1024]).toContain(held);
    expect(moved.every((byte) => byte === 7)).toBe(true);
    moved = undefined;
    await collectUntil(() => abandoned() <= before);
    // Backing stores say when the last holder dropped it; Node-API views cannot, and keep it counted.
    expect(abandoned() - before).toBe(mechanism === "backing-store" ? 0 : held);
    device.close();
  });

  // Its facts (page size, working set within memory) are the backend contract's; the default limits from
  // them, device.test.ts's.
  it("opens the host backend by default", () => {
    using device = Device.open();
    expect(device.info().platform).toBe("host");
  });

  it("has real bytes behind buffers, kept through the cache only for their owner", () => {
    using device = Device.open();
    const first = device.malloc(3 * MIB + 5);
    const bytes = first.bytes();
    bytes.fill(0xab);
    expect(bytes[3 * MIB + 4]).toBe(0xab);
    first.free();
    expect(bytes.length).toBe(0);
    const second = device.malloc(3 * MIB);
    expect(device.counters().cacheHits).toBe(1);
    expect(second.bytes()[0]).toBe(0xab); // the cached buffer's memory, not zeroed (as MLX: reuse is free)
    second.free();
  });

  // Wiring for real: VmLck follows requestResidency and endResidency (metal-native's host test); the Device's
  // wired figure is the backend's wired bytes at every step of the host fuzzing, and VmLck is back after the
  // host soak.

  it("maps a file read back byte for byte, with no rise in resident anonymous memory", () => {
    const data = randomFillSync(Buffer.alloc(32 * MIB + 123));
    const path = scratch.write("weights.bin", data);
    using device = Device.open();
    const anonymousBefore = status("RssAnon");
    using file = device.mapFile(path);
    const view = new Uint8Array(file.contents());
    expect(view.length).toBe(data.length);
    expect(Buffer.compare(Buffer.from(view.buffer, view.byteOffset, view.byteLength), data)).toBe(0);
    const anonymousAfter = status("RssAnon");
    // Reading 32 MiB through the mapping adds file-backed pages, not anonymous ones (a copy would add 32 MiB).
    expect(anonymousAfter - anonymousBefore).toBeLessThan(8 * MIB);
    // The charge (whole pages) is the fuzzing's; that writes never reach the file, the backend contract's.
  });
  // close() gives back every buffer, mapping and wired byte: the host fuzzing checks the backend after every
  // run, the host soak VmLck and /proc/self/maps too.
});
