import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { Device } from "./device.js";

describe("rt", () => {
  it("roundtrip", () => {
    for (const policy of ["segments", "bounded", "mlx"] as const) {
      using device = Device.open({ backend: new MockBackend({ realMemoryUpTo: 64 * 1024 ** 2 }), policy });
      for (const bytes of [300, 16 * 1024, 5 * 1024 ** 2 + 3]) {
        const first = device.malloc(bytes);
        first.write(new Uint8Array(bytes).fill(7));
        first.free();
        const hits = device.counters().cacheHits;
        const reused = device.malloc(bytes);
        expect(device.counters().cacheHits).toBe(hits + 1);
        reused.write(Uint8Array.of(1, 2, 3), 7);
        reused.read();
        reused.free();
      }
    }
  });
});
