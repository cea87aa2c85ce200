// Whether this machine has a CUDA device: the GPU tests run where it has, and the loader's refusal is tested
// where it has not (CI). Any other error than NativeUnavailableError is a bug and fails the import.
import type { Device } from "@nuvec/device";
import { NativeUnavailableError } from "@nuvec/metal-native";
import { expect } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import { type CudaBackend, loadCudaBackend } from "../src/index.js";

function probe(): { backend: CudaBackend } | { reason: string } {
  try {
    return { backend: loadCudaBackend() };
  } catch (error) {
    if (error instanceof NativeUnavailableError) return { reason: error.message };
    throw error;
  }
}

const probed = probe();

/** The CUDA backend of device 0, or `undefined` where there is none. */
export const cudaBackend: CudaBackend | undefined = "backend" in probed ? probed.backend : undefined;

/** Why there is no CUDA backend here (`undefined` when there is one). */
export const cudaUnavailableReason: string | undefined = "reason" in probed ? probed.reason : undefined;

/** The CUDA backend; throws where there is none (used inside GPU-only suites). */
export function cuda(): CudaBackend {
  if (cudaBackend === undefined) throw new Error(`no CUDA backend: ${cudaUnavailableReason}`);
  return cudaBackend;
}

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

/**
 * Byte for byte, in one comparison: `toEqual` walks a typed array element by element (about a minute for
 * 5 MiB), which would take most of the GPU run's time. On a difference, the first differing offset.
 */
export function expectSameBytes(actual: Uint8Array, expected: Uint8Array): void {
  const same =
    actual.byteLength === expected.byteLength &&
    Buffer.from(actual.buffer, actual.byteOffset, actual.byteLength).equals(
      Buffer.from(expected.buffer, expected.byteOffset, expected.byteLength),
    );
  if (same) return;
  const first = actual.findIndex((value, index) => value !== expected[index]);
  expect({ length: actual.byteLength, firstDifference: first }).toEqual({
    length: expected.byteLength,
    firstDifference: -1,
  });
}

/**
 * With most of the GPU taken outside `device` (all but 4 GiB of what the driver has free), an 8 GiB malloc
 * is the driver's out-of-memory, after the cache-clearing retry: `before()` runs just before the request and
 * returns the check of the refusal. Once the memory is back the same request succeeds, its last byte kept.
 */
export function expectDriverOutOfMemory(
  backend: CudaBackend,
  device: Device,
  before: () => (error: Error & { cause?: Error }) => void,
): void {
  const { free } = backend.memoryInfo();
  const held = backend.newBuffer(Math.floor((free - 4 * GIB) / MIB) * MIB);
  try {
    const check = before();
    const error = thrown(() => device.malloc(8 * GIB)) as Error & { cause?: Error };
    expect(error).toMatchObject({ name: "OutOfMemoryError", code: "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED" });
    expect(String(error.cause?.message)).toMatch(/CUDA_ERROR_OUT_OF_MEMORY/);
    check(error);
  } finally {
    held.release();
  }
  const buffer = device.malloc(8 * GIB);
  buffer.write(Uint8Array.of(42), 8 * GIB - 1);
  expect(buffer.read(8 * GIB - 1)[0]).toBe(42);
  buffer.free();
}
