// The contract every NativeBackend must keep: the mock (test/contract-mock.test.ts) and the real addon
// (test/contract-host.test.ts, and on macOS the Metal layer) run these same tests. Everything here goes
// through the NativeBackend interface only; what only the mock can do (fault injection) is tested in
// metal-native's src/mock.test.ts and src/mock/*.test.ts. Counters are compared as differences, so `make` may
// return the same backend every time.
// This file declares the suite and its options; each area's tests are in a file of their own (contract-*.ts),
// over the fixture of contract-suite.ts.
import { describe } from "vitest";
import type { NativeAllocation, NativeBackend } from "../src/index.js";
import { describeBufferRanges, describeBuffers, describeDeviceFacts } from "./contract-buffers.js";
import { describeNoLeaks } from "./contract-leaks.js";
import { describeMappedFiles } from "./contract-mapped-files.js";
import { describeLookAlikes, describeMisuse } from "./contract-refusals.js";
import { describeResidencySets } from "./contract-residency.js";
import { contractSuite } from "./contract-suite.js";
import { describeDetaching, describeNativeHandles } from "./contract-views.js";

/** Options of {@link describeNativeBackendContract}. */
export interface NativeBackendContractOptions {
  /**
   * Whether buffers are real memory of any size: the suite then also writes and reads both ends of a 64 MiB
   * buffer. Default false (the mock gives real memory to small buffers only).
   */
  realMemory?: boolean;
  /**
   * Returns an allocation of `backend` whose wiring will fail (the mock: after `failWiring = true`; the host:
   * a buffer larger than `RLIMIT_MEMLOCK`), or `undefined` when it cannot be arranged here; the suite
   * releases it. Without it the wiring-failure test is skipped.
   */
  failingWiring?: (backend: NativeBackend) => NativeAllocation | undefined;
  /** Rounds of making and releasing in the leak test. Default 100. */
  cycles?: number;
  /**
   * Reads `length` bytes of this process's memory at `address`, not through any view the backend handed out
   * (the host: `/proc/self/mem`). With it the suite checks that a native handle's `address` is the memory
   * `contents()` shows, byte for byte; without it (the mock, whose addresses are synthetic) it checks that
   * the handles are synthetic instead.
   */
  readMemory?: (address: bigint, length: number) => Uint8Array;
  /**
   * This process's memory locked as the kernel counts it (the host: VmLck). With it, every step of the
   * residency tests also checks that the kernel locked exactly the bytes `wiredBytes` says are wired.
   */
  lockedBytes?: () => number;
  /**
   * Whether buffers are host-visible (default true). False (CUDA device memory): the suite reads and writes
   * buffers with `read`/`write` instead of `contents()`, checks that `contents()` is refused, and skips
   * what is about views (none are ever handed out). Mapped files are host-visible on every backend.
   */
  hostVisible?: boolean;
}

/**
 * Declares (with vitest `describe`/`it`) the tests every {@link NativeBackend} must pass, under the title
 * `NativeBackend contract: <name>`. `make` is called before each test; it may return a new backend or the
 * same one. The suite wires only a few pages at a time (well under the default `RLIMIT_MEMLOCK`).
 */
export function describeNativeBackendContract(
  name: string,
  make: () => NativeBackend,
  options: NativeBackendContractOptions = {},
): void {
  describe(`NativeBackend contract: ${name}`, () => {
    const suite = contractSuite(make, options);
    describeDeviceFacts(suite);
    describeBuffers(suite);
    describeDetaching(suite);
    describeMisuse(suite);
    describeLookAlikes(suite);
    describeMappedFiles(suite);
    describeResidencySets(suite);
    describeNativeHandles(suite);
    describeBufferRanges(suite);
    describeNoLeaks(suite);
  });
}

export { describeAddressSpaceContract } from "./contract-address-spaces.js";
export { describeStreamContract, type StreamContractOptions } from "./stream-contract.js";
export {
  describeStreamFailureContract,
  type StreamFailureContractOptions,
} from "./stream-contract-failures.js";
export {
  CUDA_BROKEN_MODULE,
  CUDA_STANDARD_KERNELS,
  MOCK_STANDARD_KERNELS,
  STANDARD_KERNEL_PARAMETERS,
} from "./stream-contract-kernels.js";
export { elementsShape } from "./stream-contract-support.js";
