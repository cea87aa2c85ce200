// The raw interface of @nuvec/metal-native's own addon (Metal, host): every addon's (raw.ts), plus handles
// that say where their memory is, Metal's pointers, and what the loader reads.
import type { NativeMemoryHandle } from "@nuvec/native-core";
import type {
  RawAddon,
  RawAllocationHandle,
  RawBufferHandle,
  RawMappedFileHandle,
  RawResidencySetHandle,
} from "@nuvec/native-core/addon";

/** @internal */
export interface RawMetalBufferHandle extends RawAllocationHandle {
  nativeHandle(): NativeMemoryHandle;
}

/** @internal */
export interface RawMetalMappedFileHandle extends RawMappedFileHandle {
  nativeHandle(): NativeMemoryHandle;
}

/** @internal */
export interface RawMetalResidencySetHandle extends RawResidencySetHandle {
  readonly metalResidencySet: bigint | undefined;
}

/** @internal */
export interface RawMetalAddon extends RawAddon {
  NativeBufferHandle: {
    new (bytes: number): RawMetalBufferHandle;
    /** A range of `length` bytes from `offset` of a live buffer handle (the addon keeps its memory). */
    new (segment: RawBufferHandle, offset: number, length: number): RawMetalBufferHandle;
  };
  NativeMappedFileHandle: new (path: string) => RawMetalMappedFileHandle;
  NativeResidencySetHandle: new () => RawMetalResidencySetHandle;
  checkMetalDevice(device: bigint): void;
  noop(): void;
  available: boolean;
  unavailableReason: string;
}
