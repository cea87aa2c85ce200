// Options and arguments that must not slip through: every option of Device.open and free, and the
// arguments of the setters, startTrace, mapFile and the safetensors reader, are checked by one declaration
// per entry point (schemas.ts), whose type is the public options type; the constructor cannot skip open.
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError, type SchemaType } from "@nuvec/stats";
import { describe, expect, expectTypeOf, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { Device } from "./device.js";
import { DeviceBuffer } from "./device-buffer.js";
import { MappedFile } from "./mapped-file.js";
import type { DeviceOptions, FreeOptions } from "./options.js";
import { mapSafetensors, readSafetensorsHeader } from "./safetensors.js";
import type { DEVICE_OPEN, FREE_OPTIONS } from "./schemas.js";

function refusal(call: () => unknown): ArgumentError {
  const error = thrown(call);
  expect(error).toBeInstanceOf(ArgumentError);
  return error as ArgumentError;
}

function open(options: DeviceOptions = {}) {
  const backend = new MockBackend({ realFiles: false });
  return { backend, device: Device.open({ backend, ...options }) };
}

describe("the declarations are the public types", () => {
  it("Device.open's declaration is DeviceOptions; free's is FreeOptions", () => {
    expectTypeOf<SchemaType<typeof DEVICE_OPEN.fields>>().toEqualTypeOf<DeviceOptions>();
    expectTypeOf<SchemaType<typeof FREE_OPTIONS.fields>>().toEqualTypeOf<FreeOptions>();
  });
});

describe("Device.open", () => {
  // A bad value of every declared option (named with the entry point, nothing made) and options that are not
  // an object: the bad input catalogue (test/reliability/bad-input.test.ts), which names every DEVICE_OPEN field.
  it("an unknown option", () => {
    expect(refusal(() => Device.open({ memoryLimt: 1 } as DeviceOptions)).argument).toBe("memoryLimt");
  });
});

describe("arguments", () => {
  it("startTrace(name) takes a string (or an options object: trace.test.ts) only; nothing starts", () => {
    const { device } = open();
    for (const name of [42, null, [], "", "x".repeat(257)]) {
      expect(refusal(() => device.startTrace(name as string)).argument).toBe("name");
    }
    expect(() => device.stopTrace()).toThrow(/no trace is being recorded/);
    device.startTrace("ok");
    expect(device.stopTrace().header?.name).toBe("ok");
  });

  it("-0 is 0: malloc(-0) is an empty buffer; the setters take it as a limit of 0 and read it back as 0", () => {
    const { device } = open();
    const empty = device.malloc(-0);
    expect(empty.allocatedLength).toBe(0);
    empty.free();
    expect(device.setCacheLimit(-0)).toBeGreaterThan(0);
    expect(Object.is(device.memoryStats().cacheLimit, 0)).toBe(true);
    expect(device.setWiredLimit(-0)).toBe(0);
    expect(Object.is(device.memoryStats().wiredLimit, 0)).toBe(true);
    expect(device.setMemoryLimit(-0)).toBeGreaterThan(0);
    expect(Object.is(device.memoryStats().memoryLimit, 0)).toBe(true);
    expect(Object.is(device.setCacheLimit(5), 0)).toBe(true);
  });

  // free's options (an `after` that is not a promise, a then getter that throws, an unknown option): the bad
  // input catalogue, for buffers and mapped files.

  it("the safetensors reader names its bad arguments (mapFile's: the bad input catalogue)", () => {
    const { device } = open();
    expect(refusal(() => mapSafetensors(null as unknown as Device, "x")).argument).toBe("device");
    expect(refusal(() => mapSafetensors(device, "" as string)).argument).toBe("path");
    expect(refusal(() => readSafetensorsHeader(new Uint8Array(8) as unknown as ArrayBuffer)).argument).toBe(
      "bytes",
    );
  });
});

describe("the constructors cannot skip Device.open, malloc or mapFile", () => {
  it("new DeviceBuffer(...) and new MappedFile(...) from JavaScript are refused", () => {
    const { device } = open();
    const Buffer = DeviceBuffer as unknown as new (...args: unknown[]) => DeviceBuffer;
    const File = MappedFile as unknown as new (...args: unknown[]) => MappedFile;
    const fake = { live: true, allocation: { buffer: undefined, length: 5, allocatedLength: 256 } };
    expect(refusal(() => new Buffer(device, fake)).argument).toBe("new DeviceBuffer()");
    expect(refusal(() => new File(device, {}, {})).argument).toBe("new MappedFile()");
    expect(device.counters().liveBuffers).toBe(0);
  });

  it("new Device(...) from JavaScript is refused before anything is made", () => {
    const backend = new MockBackend({ realFiles: false });
    const Constructor = Device as unknown as new (...args: unknown[]) => Device;
    const error = refusal(() => new Constructor(backend, { safetyNet: "no" }, undefined, backend));
    expect(error.argument).toBe("new Device()");
    expect(backend.counters().residencySetsMade).toBe(0);
  });
});
