// One error family: whichever layer refuses a call (the allocator, residency, the Device or the native
// backend) the error is a NuvecError, and a bad argument an ArgumentError naming the argument.
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { Device, NuvecError, OutOfMemoryError } from "./index.js";

describe("one error family across the layers", () => {
  it.each([
    ["malloc(-1) (the allocator)", (device: Device) => device.malloc(-1), "bytes"],
    ["setMemoryLimit(1.5) (the allocator)", (device: Device) => device.setMemoryLimit(1.5), "bytes"],
    ["setWiredLimit(-1) (the Device)", (device: Device) => device.setWiredLimit(-1), "bytes"],
    ['mapFile("") (the Device)', (device: Device) => device.mapFile(""), "path"],
    ['mapFile("a\\0b") (the backend)', (device: Device) => device.mapFile("a\0b"), "path"],
  ])("%s: an ArgumentError naming its argument, nothing changed", (_name, action, argument) => {
    using device = Device.open({ backend: new MockBackend() });
    const before = device.memoryStats();
    expect(() => action(device)).toThrow(ArgumentError);
    expect(() => action(device)).toThrow(NuvecError);
    expect(() => action(device)).toThrow(
      expect.objectContaining({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument }),
    );
    expect(device.memoryStats()).toEqual(before);
  });

  it("a refusal that is not about an argument is a NuvecError, not an ArgumentError", () => {
    using device = Device.open({ backend: new MockBackend(), memoryLimit: 1024 });
    const refused = expect(() => device.malloc(4096));
    refused.toThrow(OutOfMemoryError);
    refused.toThrow(NuvecError);
    refused.not.toThrow(ArgumentError);
  });
});
