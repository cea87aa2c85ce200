// The NativeBackend contract run against the mock, in the configurations runtimes use it in.

import { describeAddressSpaceContract, describeNativeBackendContract } from "@nuvec/native-core/contract";
import { MockBackend } from "../src/mock.js";

/** Makes wiring of the returned buffer fail through the mock's fault injection. */
function failingWiring(backend: MockBackend) {
  const buffer = backend.newBuffer(backend.pageSize);
  backend.failWiring = (allocation) => allocation === buffer;
  return buffer;
}

describeNativeBackendContract("mock, defaults (a 16 GiB Mac)", () => new MockBackend(), {
  failingWiring: (backend) => failingWiring(backend as MockBackend),
});

describeNativeBackendContract(
  "mock, like a Linux host (4 KiB pages, real memory for everything)",
  () =>
    new MockBackend({
      name: "Mock host",
      memorySize: 2 * 1024 ** 3,
      pageSize: 4096,
      realMemoryUpTo: Number.POSITIVE_INFINITY,
    }),
  { realMemory: true, failingWiring: (backend) => failingWiring(backend as MockBackend), cycles: 50 },
);

describeNativeBackendContract(
  "mock without residency sets",
  () => new MockBackend({ supportsResidencySets: false }),
  { cycles: 20 },
);

/** One backend shared by every test, as the real addon is. */
const shared = new MockBackend({ name: "Mock shared" });
describeNativeBackendContract("mock, one backend for every test", () => shared, {
  failingWiring: (backend) => failingWiring(backend as MockBackend),
});

describeAddressSpaceContract(
  "mock with 64 KiB granules",
  () => new MockBackend({ mapGranularity: 64 * 1024 }),
);
