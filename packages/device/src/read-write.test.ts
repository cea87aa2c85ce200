// DeviceBuffer.read/write (the same program on every backend) and contents() refused where the memory is not
// host-visible (CUDA). The CUDA backend itself is tested on a GPU (packages/cuda-native); here a mock stands
// in for a device whose buffers only copy.
import type { NativeBuffer } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError, type NuvecError, UnsupportedError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { patternBytes as pattern } from "../../native-core/test/support.js";
import { thrown } from "../../stats/test/thrown.js";
import { wrapBackend } from "../test/reliability/support.js";
import { Device } from "./index.js";

const GIB = 1024 ** 3;

function hostDevice(): Device {
  return Device.open({
    backend: new MockBackend({
      memorySize: 16 * GIB,
      recommendedMaxWorkingSetSize: 8 * GIB,
      realFiles: false,
    }),
  });
}

/** A mock whose buffers behave like device memory: no contents(), bytes moved only by read/write (counted). */
function deviceMemoryMock() {
  const inner = new MockBackend({
    memorySize: 16 * GIB,
    recommendedMaxWorkingSetSize: 8 * GIB,
    realFiles: false,
    supportsResidencySets: false,
  });
  const copies = { reads: 0, writes: 0 };
  const newBuffer = (bytes: number): NativeBuffer => {
    const buffer = inner.newBuffer(bytes);
    return {
      get length() {
        return buffer.length;
      },
      get allocatedSize() {
        return buffer.allocatedSize;
      },
      get released() {
        return buffer.released;
      },
      contents(): ArrayBuffer {
        throw new UnsupportedError("ERR_NUVEC_NOT_HOST_VISIBLE", "contents(): device memory");
      },
      detachContents: () => buffer.detachContents(),
      nativeHandle: () => ({ platform: "cuda", devicePointer: 0x1000n, device: 0 }),
      release: () => buffer.release(),
      read(offset: number, length: number): Uint8Array {
        copies.reads += 1;
        return new Uint8Array(buffer.contents(), offset, length).slice();
      },
      write(source: ArrayBuffer | ArrayBufferView, offset: number): void {
        copies.writes += 1;
        const bytes = ArrayBuffer.isView(source)
          ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
          : new Uint8Array(source);
        new Uint8Array(buffer.contents(), offset).set(bytes);
      },
    };
  };
  const backend = wrapBackend(inner, {
    name: "device memory (mock)",
    hostVisible: false,
    newBuffer,
    newResidencySet: () => undefined,
  });
  return { backend, copies };
}

function expectDeviceError(
  action: () => unknown,
  type: abstract new (...args: never[]) => NuvecError,
  code: string,
) {
  const caught = thrown(action);
  expect(caught).toBeInstanceOf(type);
  expect((caught as NuvecError).code).toBe(code);
  return caught as NuvecError;
}

describe("DeviceBuffer.write and read on host-visible memory", () => {
  it("write then read returns the bytes, and contents() sees the same memory", () => {
    using device = hostDevice();
    const buffer = device.malloc(5000);
    const bytes = pattern(5000, 3);
    buffer.write(bytes);
    expect(buffer.read()).toEqual(bytes);
    expect(new Uint8Array(buffer.contents(), 0, 5000)).toEqual(bytes);
    buffer.write(new Uint16Array([0x0201, 0x0403]), 10);
    expect([...buffer.read(10, 4)]).toEqual([1, 2, 3, 4]);
    buffer.write(new DataView(new Uint8Array([9, 8]).buffer), 4998);
    expect([...buffer.read(4998)]).toEqual([9, 8]);
  });

  it("read returns a copy: writing to it changes nothing", () => {
    using device = hostDevice();
    const buffer = device.malloc(64);
    buffer.write(pattern(64, 1));
    const copy = buffer.read();
    copy.fill(0);
    expect(buffer.read()).toEqual(pattern(64, 1));
  });

  it("a view into a larger ArrayBuffer writes only its own bytes", () => {
    using device = hostDevice();
    const buffer = device.malloc(8);
    buffer.write(new Uint8Array(8));
    const backing = pattern(32, 5);
    buffer.write(backing.subarray(10, 14), 2);
    expect([...buffer.read()]).toEqual([0, 0, ...backing.subarray(10, 14), 0, 0]);
  });

  it("a 0-byte buffer reads and writes nothing", () => {
    using device = hostDevice();
    const buffer = device.malloc(0);
    buffer.write(new Uint8Array(0));
    expect(buffer.read().byteLength).toBe(0);
  });

  it.each([
    ["offset -1", -1, 4],
    ["offset 1.5", 1.5, 4],
    ["offset past the end", 65, 0],
    ["a source past the end", 62, 4],
  ])("write with %s is an ArgumentError and writes nothing", (_label, offset, length) => {
    using device = hostDevice();
    const buffer = device.malloc(64);
    buffer.write(new Uint8Array(64));
    const before = device.counters();
    expectDeviceError(
      () => buffer.write(new Uint8Array(length).fill(0xff), offset),
      ArgumentError,
      "ERR_NUVEC_INVALID_ARGUMENT",
    );
    expect(buffer.read()).toEqual(new Uint8Array(64));
    expect(device.counters()).toEqual(before);
  });

  // A source that is not bytes, read()'s bad offsets and lengths, read() and write() after free or close:
  // the bad input catalogue (test/reliability/bad-input.test.ts).
});

describe("memory that is not host-visible", () => {
  it("contents() and bytes() are refused with UnsupportedError; counters unchanged", () => {
    using device = Device.open({ backend: deviceMemoryMock().backend });
    const buffer = device.malloc(4096);
    const before = device.counters();
    const error = expectDeviceError(() => buffer.contents(), UnsupportedError, "ERR_NUVEC_NOT_HOST_VISIBLE");
    expect(error.message).toMatch(/not host-visible/);
    expectDeviceError(() => buffer.bytes(), UnsupportedError, "ERR_NUVEC_NOT_HOST_VISIBLE");
    expect(device.counters()).toEqual(before);
  });

  it("write and read go through the backend's copies, and survive cache reuse", () => {
    const { backend, copies } = deviceMemoryMock();
    using device = Device.open({ backend });
    const first = device.malloc(3000);
    first.write(pattern(3000, 9));
    expect(copies.writes).toBe(1);
    first.free();
    const reused = device.malloc(3000); // the same cached buffer
    expect(device.counters().cacheHits).toBe(1);
    expect(reused.read()).toEqual(pattern(3000, 9));
    expect(copies.reads).toBe(1);
  });

  it("the device reports hostVisible false in info()", () => {
    using device = Device.open({ backend: deviceMemoryMock().backend });
    expect(device.info().hostVisible).toBe(false);
    using host = hostDevice();
    expect(host.info().hostVisible).toBeUndefined();
  });
});
