// Traces of multi-stream work: a free held for several streams is recorded when its memory goes back to
// the cache, and a trace started while buffers are held opens with them, so a replay of the trace reaches
// the Device's figures to the byte.
import { replayOptionsFromHeader, replayTrace } from "@nuvec/allocator";
import { describe, expect, it } from "vitest";
import { runStream, streamDevice } from "../../test/streams-support.js";
import type { DeviceBuffer } from "../index.js";

const KIB = 1024;

describe("a trace of multi-stream work on the mock", () => {
  for (const policy of ["mlx", "bounded", "segments"] as const) {
    it(`replays to the Device's figures exactly (${policy})`, () => {
      const { device, mock } = streamDevice("manual", { policy });
      const streams = [device.newStream(), device.newStream(), device.newStream()];
      // Held before the trace starts: the trace opens with it, and records its free when it goes back.
      const early = device.malloc(64 * KIB);
      streams[0]!.write(early, new Uint8Array(8));
      streams[1]!.write(early, new Uint8Array(8), 8);
      early.free();
      device.startTrace("streams");
      const live: DeviceBuffer[] = [];
      let heldSeen = 0;
      for (let round = 0; round < 240; round += 1) {
        const bytes = ((round * 7919) % 61) * KIB + (round % 4) * 3 + 4;
        const buffer = device.malloc(bytes);
        const first = streams[round % 3]!;
        first.write(buffer, new Uint8Array(4).fill(round & 0xff));
        if (round % 4 === 1) streams[(round + 1) % 3]!.read(buffer, 0, 4).catch(() => {});
        live.push(buffer);
        if (round % 3 === 0) live.splice((round * 31) % live.length, 1)[0]!.free();
        if (round % 11 === 10) runStream(mock, streams[round % 3]!);
        if (round % 29 === 28) device.synchronize();
        if (round === 150) device.setCacheLimit(256 * KIB);
        heldSeen = Math.max(heldSeen, device.counters().streamPending.buffers);
      }
      // Held when the trace stops: still in `active`, its free not recorded.
      const last = device.malloc(8 * KIB);
      streams[0]!.write(last, new Uint8Array(8));
      streams[2]!.write(last, new Uint8Array(8), 8);
      last.free();
      expect(heldSeen).toBeGreaterThan(0);
      expect(device.counters().streamPending.buffers).toBeGreaterThan(0);
      const trace = device.stopTrace();
      const replay = replayTrace([trace.header!, ...trace.events], replayOptionsFromHeader(trace.header));
      const stats = device.memoryStats();
      const counters = device.counters();
      expect(replay.stats).toMatchObject({
        active: stats.active,
        peakActive: stats.peakActive,
        reserved: stats.reserved,
        peakReserved: stats.peakReserved,
        cache: stats.cache,
        systemAllocations: stats.systemAllocations,
        cacheLimit: stats.cacheLimit,
      });
      expect(replay.counters).toMatchObject({
        systemReleases: counters.systemReleases,
        cacheHits: counters.cacheHits,
        cacheMisses: counters.cacheMisses,
        liveBuffers: counters.liveBuffers,
      });
      device.close();
    });
  }
});
