// What `npm install @nuvec/device` alone gives a user: the stats formatting from the main entry and the mock
// from `@nuvec/device/mock`, the very classes of the packages they come from (so `instanceof` holds whichever
// import a runtime and its tests use).
import * as metalMock from "@nuvec/metal-native/mock";
import * as stats from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import * as device from "../src/index.js";
import * as deviceMock from "../src/mock.js";

describe("@nuvec/device entry points", () => {
  it("re-exports the stats formatting a Device user prints with", () => {
    expect(device.formatBytes).toBe(stats.formatBytes);
    expect(device.formatMemoryStats).toBe(stats.formatMemoryStats);
    expect(device.emptyMemoryStats).toBe(stats.emptyMemoryStats);
    expect(device.formatBytes(1_610_612_736)).toBe("1.50 GiB");
  });

  it("@nuvec/device/mock is @nuvec/metal-native/mock, every export the same object", () => {
    expect(Object.keys(deviceMock).sort()).toEqual(Object.keys(metalMock).sort());
    const reexported = new Map(Object.entries(deviceMock));
    for (const [name, value] of Object.entries(metalMock)) expect(reexported.get(name), name).toBe(value);
    const backend = new deviceMock.MockBackend();
    const opened = device.Device.open({ backend });
    opened.malloc(1000).free();
    opened.close();
    expect(backend.counters().buffersMade).toBe(backend.counters().buffersReleased);
    expect(backend).toBeInstanceOf(metalMock.MockBackend);
  });
});
