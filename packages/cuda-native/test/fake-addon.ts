// A stand-in for the CUDA backend's raw addon (the interface of native/binding.cc, in memory), for the tests
// of the TypeScript layer that run without a GPU (wrappers.test.ts, streams-wrappers.test.ts).
import type { NativeCounters } from "@nuvec/metal-native";
import type { RawCudaAddon, RawCudaFacts } from "../src/raw.js";

/** The stand-in's page size (MLX's CUDA page). */
export const PAGE = 16_384;

/**
 * A raw addon in memory: every call is logged by name, device pointers count up from 0x7000_0000_0000 (1 MiB
 * apart; an address space's 4 GiB apart, from 0x7f00_0000_0000). `mapGranularity` gives it address spaces
 * (reserveAddressSpace, mapMemory and unmapMemory logged, nothing checked).
 */
export function fakeAddon(options: { failAllocation?: boolean; mapGranularity?: number } = {}) {
  const calls: string[] = [];
  let nextPointer = 0x7000_0000_0000n;
  const facts: RawCudaFacts = {
    name: "Fake GPU",
    platform: "cuda",
    memorySize: 1 << 30,
    recommendedMaxWorkingSetSize: 1 << 30,
    maxBufferLength: 1 << 29,
    resourceLimit: 2 ** 31 - 1,
    pageSize: PAGE,
    supportsResidencySets: true,
    hostVisible: false,
    ordinal: 0,
    driverVersion: 13000,
    mapGranularity: options.mapGranularity ?? 0,
  };
  // The addon's calls by slot reach a handle through this table.
  const slots: Allocation[] = [];
  abstract class Allocation {
    released = false;
    readonly devicePointer: bigint | undefined;
    readonly slot = slots.length;
    constructor(
      readonly length: number,
      readonly allocatedSize: number,
      pointer: boolean,
    ) {
      if (pointer) nextPointer += 0x10_0000n;
      this.devicePointer = pointer ? nextPointer : undefined;
      this.bytes = new Uint8Array(length);
      slots.push(this);
    }
    readonly bytes: Uint8Array;
    abstract contents(): ArrayBuffer;
    read(offset: number, length: number, target?: ArrayBuffer): ArrayBuffer {
      calls.push("read");
      const copy = this.bytes.slice(offset, offset + length);
      if (target === undefined) return copy.buffer;
      new Uint8Array(target).set(copy);
      return target;
    }
    write(source: ArrayBuffer | ArrayBufferView, offset: number): void {
      calls.push("write");
      const view = ArrayBuffer.isView(source)
        ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
        : new Uint8Array(source);
      this.bytes.set(view, offset);
    }
    detachContents(): undefined {
      calls.push("detachContents");
      return undefined;
    }
    release(): void {
      calls.push("release");
      this.released = true;
    }
  }
  class NativeBufferHandle extends Allocation {
    constructor(length: number) {
      if (options.failAllocation)
        throw Object.assign(new Error("CUDA_ERROR_OUT_OF_MEMORY"), {
          code: "ERR_NUVEC_ALLOCATION_FAILED",
          bytes: length,
        });
      super(length, Math.ceil(length / 256) * 256, true);
    }
    contents(): ArrayBuffer {
      throw Object.assign(new Error("device memory has no CPU address"), {
        code: "ERR_NUVEC_NOT_HOST_VISIBLE",
      });
    }
  }
  let nextSpace = 0x7f00_0000_0000n;
  /** An address space: its own pointer range, bytes kept in memory (the fake has no unmapped memory). */
  class AddressSpaceHandle extends Allocation {
    override readonly devicePointer: bigint;
    constructor(length: number) {
      super(length, 0, false);
      this.devicePointer = nextSpace;
      nextSpace += 0x1_0000_0000n;
    }
    contents(): ArrayBuffer {
      throw Object.assign(new Error("device memory has no CPU address"), {
        code: "ERR_NUVEC_NOT_HOST_VISIBLE",
      });
    }
  }
  class NativeMappedFileHandle extends Allocation {
    readonly mappedLength = PAGE;
    constructor(readonly path: string) {
      super(100, PAGE, false);
    }
    contents(): ArrayBuffer {
      return new ArrayBuffer(this.length);
    }
  }
  class NativeResidencySetHandle {
    allocatedSize = 0;
    allocationCount = 0;
    wiringFailures = 0;
    lastWiringError = undefined;
    released = false;
    add(): void {
      calls.push("set.add");
    }
    remove(): void {
      calls.push("set.remove");
    }
    commit(): void {}
    requestResidency(): void {}
    endResidency(): void {}
    release(): void {
      this.released = true;
    }
  }
  const addon: RawCudaAddon = {
    contentsOf: (slot) => (slots[slot] as Allocation).contents(),
    detachContentsOf: (slot) => (slots[slot] as Allocation).detachContents(),
    readOf: (slot, offset, length, target) => (slots[slot] as Allocation).read(offset, length, target),
    writeOf: (slot, source, offset) => (slots[slot] as Allocation).write(source, offset),
    NativeBufferHandle,
    NativeMappedFileHandle,
    NativeResidencySetHandle,
    open: () => undefined,
    facts: () => facts,
    counters: () => ({}) as NativeCounters,
    lastWiringError: () => undefined,
    attachResidencySet: () => {
      calls.push("attachResidencySet");
    },
    memoryInfo: () => ({ free: 1, total: 2 }),
    copyFromMapping: (buffer, mapping, length) => {
      calls.push(
        `copyFromMapping ${buffer instanceof NativeBufferHandle} ${mapping instanceof NativeMappedFileHandle} ${length}`,
      );
    },
    timeDriverAllocFree: () => 1,
    driverVersion: () => 13000,
    reserveAddressSpace: (bytes) => {
      if (!options.mapGranularity) throw new Error("no address spaces in this fake");
      calls.push(`reserveAddressSpace ${bytes}`);
      return new AddressSpaceHandle(bytes) as never;
    },
    mapMemory: (_space, offset, length) => void calls.push(`mapMemory ${offset} ${length}`),
    unmapMemory: (_space, offset, length) => void calls.push(`unmapMemory ${offset} ${length}`),
    clearCurrentContext: () => undefined,
    noop: () => undefined,
  };
  return { addon, facts, calls };
}
