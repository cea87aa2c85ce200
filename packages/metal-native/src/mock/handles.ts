import type { MockMemoryHandle } from "@nuvec/native-core";

// Synthetic handle values. The top 16 bits of each are a tag that no canonical x86-64 or arm64 address has
// (user addresses have them all 0, kernel addresses all 1), so a kernel that dereferences one faults at
// once instead of scribbling somewhere. Bit 47 tells buffers from mappings; the allocation's id (from 1,
// below 2^31 in any test) fills bits 16–46, so every allocation of a backend gets distinct values.
const ADDRESS_TAG = 0x4d41n; // "MA"
const METAL_BUFFER_TAG = 0x4d42n; // "MB"
const GPU_ADDRESS_TAG = 0x4d47n; // "MG"
const MAPPING_BIT = 1n << 47n;

function synthetic(tag: bigint, kind: "buffer" | "mapping", id: number): bigint {
  return (tag << 48n) | (kind === "mapping" ? MAPPING_BIT : 0n) | (BigInt(id) << 16n);
}

/** The mock's handle of allocation `id` of `kind`: frozen, synthetic, never a valid address. */
export function mockMemoryHandle(kind: "buffer" | "mapping", id: number): MockMemoryHandle {
  return Object.freeze({
    platform: "mock",
    address: synthetic(ADDRESS_TAG, kind, id),
    metalBuffer: synthetic(METAL_BUFFER_TAG, kind, id),
    gpuAddress: synthetic(GPU_ADDRESS_TAG, kind, id),
  });
}
