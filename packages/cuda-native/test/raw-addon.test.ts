// The raw addon's interface, which runs without a GPU (nothing here opens a device): what it exports and
// what its handle classes answer. The addon is metal-native's shared N-API layer with this addon's entry
// file (native/binding.cc): these pin that everything cuda.ts calls is there, plus what the shared layer
// gave it (nativeHandle, escape-reporting detachContents, metalResidencySet), so a change to the shared
// layer cannot silently drop a member this addon needs.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findCudaAddon } from "../src/loader.js";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const found = findCudaAddon(packageRoot, process.platform, process.env.NUVEC_CUDA_NATIVE_ADDON);
const raw = "addon" in found ? (found.addon as unknown as Record<string, unknown>) : undefined;

function members(name: string): string[] {
  const handleClass = raw?.[name] as { prototype: object };
  return Object.getOwnPropertyNames(handleClass.prototype).filter((member) => member !== "constructor");
}

describe.runIf(raw !== undefined)("the raw CUDA addon (shared N-API layer + its entry file)", () => {
  it("exports the common functions and CUDA's own", () => {
    for (const name of [
      "NativeBufferHandle",
      "NativeMappedFileHandle",
      "NativeResidencySetHandle",
      "facts",
      "counters",
      "lastWiringError",
      "attachResidencySet",
      "secureViews",
      "contentsOf",
      "detachContentsOf",
      "readOf",
      "writeOf",
      "noop",
      "open",
      "memoryInfo",
      "copyFromMapping",
      "timeDriverAllocFree",
      "driverVersion",
      "reserveAddressSpace",
      "mapMemory",
      "unmapMemory",
      "clearCurrentContext",
    ]) {
      expect(typeof raw?.[name], name).toBe("function");
    }
    // metal-native's own: not here.
    expect(raw?.checkMetalDevice).toBeUndefined();
    expect(raw?.available).toBeUndefined();
  });

  it("buffers and mapped files: the shared members (copies included), plus the device pointer", () => {
    const shared = [
      "contents",
      "detachContents",
      "nativeHandle",
      "release",
      "length",
      "allocatedSize",
      "released",
      "quarantinedBytes",
      "slot",
      "read",
      "write",
    ];
    expect(members("NativeBufferHandle").sort()).toEqual([...shared, "devicePointer"].sort());
    expect(members("NativeMappedFileHandle").sort()).toEqual(
      [...shared, "devicePointer", "mappedLength"].sort(),
    );
  });

  it("residency sets: the shared members", () => {
    expect(members("NativeResidencySetHandle").sort()).toEqual(
      [
        "add",
        "remove",
        "commit",
        "requestResidency",
        "endResidency",
        "release",
        "allocatedSize",
        "allocationCount",
        "wiringFailures",
        "lastWiringError",
        "metalResidencySet",
        "released",
      ].sort(),
    );
  });

  it("driverVersion() answers without a device (0 without a driver)", () => {
    const driverVersion = raw?.driverVersion as () => number;
    const version = driverVersion();
    expect(Number.isInteger(version) && version >= 0).toBe(true);
  });
});
