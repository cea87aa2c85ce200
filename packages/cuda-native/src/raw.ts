// The raw CUDA addon (native/binding.cc): @nuvec/metal-native's raw interface (its `/addon` entry) plus
// device pointers, copies, `open(ordinal)` and the driver's figures.
import type {
  RawAddon,
  RawAllocationHandle,
  RawBufferHandle,
  RawFacts,
  RawMappedFileHandle,
} from "@nuvec/metal-native/addon";

/** @internal */
export interface RawCudaBufferHandle extends RawBufferHandle {
  readonly devicePointer: bigint | undefined;
}

/** @internal */
export interface RawCudaMappedFileHandle extends RawMappedFileHandle {
  /** The registered mapping's device address while it is wired. */
  readonly devicePointer: bigint | undefined;
}

/** @internal */
export interface RawCudaFacts extends RawFacts {
  platform: "cuda";
  hostVisible: boolean;
  ordinal: number;
  driverVersion: number;
  /** The driver's granularity for mapped device memory; 0 without virtual memory management. */
  mapGranularity: number;
}

/** @internal */
export interface RawCudaAddon extends RawAddon {
  NativeBufferHandle: new (bytes: number) => RawCudaBufferHandle;
  NativeMappedFileHandle: new (path: string) => RawCudaMappedFileHandle;
  open(device: number): void;
  facts(): RawCudaFacts;
  memoryInfo(): { free: number; total: number };
  copyFromMapping(buffer: RawAllocationHandle, mapping: RawAllocationHandle, length: number): void;
  timeDriverAllocFree(bytes: number, count: number): number;
  driverVersion(): number;
  reserveAddressSpace(bytes: number): RawCudaBufferHandle;
  mapMemory(space: RawAllocationHandle, offset: number, length: number): void;
  unmapMemory(space: RawAllocationHandle, offset: number, length: number): void;
  /** Tests: makes no CUDA context current on this thread. */
  clearCurrentContext(): void;
  noop(): void;
}
