// Segments that outlive their blocks' owners on the host backend, measured by what the kernel shows
// (RssAnon): a block whose view moved away holds its whole segment, the figures and the
// limit count that segment, and every teardown path gives every segment back.
import { OutOfMemoryError } from "@nuvec/stats";
import { expect } from "vitest";
import { Device } from "../../src/device.js";
import {
  collectUntil,
  deferred,
  describeOnHost,
  expectNothingHeldSince,
  hostBackend,
  itOnHost,
  procStatus,
  transfer,
  turns,
} from "./support.js";

const MiB = 1024 ** 2;

/** Thirteen 3 MiB blocks, every page touched: one 40 MiB segment of the segments policy, 39 MiB resident. */
function touchedBlocks(device: Device) {
  return Array.from({ length: 13 }, () => {
    const buffer = device.malloc(3 * MiB);
    new Uint8Array(buffer.contents()).fill(1);
    return buffer;
  });
}

describeOnHost("a segment a quarantined block holds", () => {
  itOnHost(
    "counts whole in quarantined and the limit once it goes back, as resident as the figures say; collected, it leaves both",
    async () => {
      const backend = hostBackend();
      const start = backend.counters();
      const device = Device.open({ backend, policy: "segments", safetyNet: false });
      const rss = procStatus("RssAnon");
      const buffers = touchedBlocks(device);
      let moved: ArrayBuffer | undefined = transfer(buffers[0]!.contents());
      for (const buffer of buffers) buffer.free();
      // Held by the policy: the quarantined block counts in quarantined, the rest in cache, never twice.
      expect(device.memoryStats()).toMatchObject({ active: 0, quarantined: 3 * MiB, cache: 37 * MiB });
      device.clearCache();
      expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, reserved: 0, quarantined: 40 * MiB });
      // What the figures say is what is resident: the 39 MiB touched, nothing more than the 40 MiB counted.
      const resident = procStatus("RssAnon") - rss;
      expect(resident).toBeGreaterThanOrEqual(39 * MiB);
      expect(resident).toBeLessThanOrEqual(40 * MiB + 4 * MiB);
      device.setMemoryLimit(41 * MiB);
      expect(() => device.malloc(2 * MiB)).toThrow(OutOfMemoryError);
      expect(device.counters().outOfMemoryRefusals).toBe(1);
      moved = undefined;
      await collectUntil(() => device.memoryStats().quarantined === 0);
      expect(moved).toBeUndefined();
      expect(device.memoryStats()).toMatchObject({ quarantined: 0, reserved: 0 });
      expect(procStatus("RssAnon") - rss).toBeLessThan(4 * MiB);
      device.malloc(2 * MiB).free();
      device.close();
      expectNothingHeldSince(start, backend.counters());
    },
  );

  itOnHost(
    "the safety net's reclaim of a dropped buffer whose view moved away quarantines its block the same way",
    async () => {
      const backend = hostBackend();
      const start = backend.counters();
      const device = Device.open({ backend, policy: "segments" });
      let buffers: ReturnType<typeof touchedBlocks> | undefined = touchedBlocks(device);
      let moved: ArrayBuffer | undefined = transfer(buffers[0]!.contents());
      for (const buffer of buffers.slice(1)) buffer.free();
      // The first buffer is dropped without free(): the safety net gives it back once it is collected.
      buffers = undefined;
      await turns(2);
      await collectUntil(() => device.counters().leakedBuffers === 1);
      expect(device.memoryStats()).toMatchObject({ active: 0, quarantined: 3 * MiB, cache: 37 * MiB });
      device.clearCache();
      expect(device.memoryStats()).toMatchObject({ reserved: 0, quarantined: 40 * MiB });
      moved = undefined;
      await collectUntil(() => device.memoryStats().quarantined === 0);
      expect([moved, buffers, device.memoryStats().quarantined]).toEqual([undefined, undefined, 0]);
      device.close();
      expectNothingHeldSince(start, backend.counters());
    },
  );

  itOnHost(
    "close() with a quarantined block and with a free still pending: every segment goes back, the last once the view is collected",
    async () => {
      const backend = hostBackend();
      const start = backend.counters();
      const device = Device.open({ backend, policy: "segments", safetyNet: false });
      const rss = procStatus("RssAnon");
      const buffers = touchedBlocks(device);
      // A second segment whose block a kernel still uses at close.
      const pending = device.malloc(30 * MiB);
      new Uint8Array(pending.contents()).fill(2);
      const kernel = deferred();
      pending.free({ after: kernel.promise });
      let moved: ArrayBuffer | undefined = transfer(buffers[5]!.contents());
      device.close();
      kernel.resolve();
      await turns(2);
      expect(device.counters().pendingFrees).toBe(0);
      moved = undefined;
      await collectUntil(() => backend.counters().quarantinedBytes === 0);
      expect(moved).toBeUndefined();
      expectNothingHeldSince(start, backend.counters());
      expect(backend.counters()).toMatchObject({ quarantinedBytes: 0, quarantinedAllocations: 0 });
      expect(procStatus("RssAnon") - rss).toBeLessThan(4 * MiB);
    },
  );
});
