// What a Device's refusals by the memory limit and by a failing system move, to the byte (docs/ERRORS.md,
// "What a refusal counts"); the allocator's own table is pinned under every policy in
// packages/allocator/src/refusal-counters.test.ts, and the other refusals move nothing (the bad-input catalogue).
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { Device } from "./index.js";

const MIB = 1024 ** 2;

/** Every figure of `device`, the backend's counters among them. */
const everything = (device: Device) => ({ stats: device.memoryStats(), counters: device.counters() });

describe("the figures a Device's refusal moves", () => {
  it("malloc past the memory limit: outOfMemoryRefusals + 1, nothing else", () => {
    const device = Device.open({ backend: new MockBackend(), memoryLimit: MIB });
    const before = everything(device);
    expect(thrown(() => device.malloc(2 * MIB))).toMatchObject({ code: "ERR_NUVEC_OUT_OF_MEMORY" });
    const after = everything(device);
    expect(after).toEqual({ ...before, counters: { ...before.counters, outOfMemoryRefusals: 1 } });
    device.close();
  });

  it("mapFile past the memory limit: outOfMemoryRefusals + 1, and the backend mapped and unmapped it once", () => {
    const backend = new MockBackend({ realFiles: false });
    backend.addFile("model.bin", 4096);
    const device = Device.open({ backend, memoryLimit: 1024 });
    const before = everything(device);
    expect(thrown(() => device.mapFile("model.bin"))).toMatchObject({ code: "ERR_NUVEC_OUT_OF_MEMORY" });
    const { backend: native, ...counters } = before.counters;
    expect(everything(device)).toEqual({
      stats: before.stats,
      counters: {
        ...counters,
        outOfMemoryRefusals: 1,
        backend: { ...native, mappingsMade: 1, mappingsReleased: 1 },
      },
    });
    device.close();
  });
});
