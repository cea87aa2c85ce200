// The stream contract (@nuvec/native-core/contract) run against the mock, with its TypeScript kernels.

import {
  describeStreamContract,
  describeStreamFailureContract,
  MOCK_STANDARD_KERNELS,
} from "@nuvec/native-core/contract";
import { MockBackend } from "../src/mock.js";

describeStreamContract("mock, auto completion", () => new MockBackend(), {
  kernels: { mock: MOCK_STANDARD_KERNELS },
  brokenModule: { mock: { broken: { parameters: ["buffer", "f16"], run() {} } } as never },
  deferred: true,
  rangesShareBytes: false,
});

/** One backend shared by every test, as the real addon is. */
const shared = new MockBackend({ name: "Mock shared", pageSize: 4096 });
describeStreamContract("mock, one backend for every test", () => shared, {
  kernels: { mock: MOCK_STANDARD_KERNELS },
  deferred: true,
  rangesShareBytes: false,
});

describeStreamContract(
  "mock with address spaces (64 KiB granules)",
  () => new MockBackend({ mapGranularity: 64 * 1024 }),
  { kernels: { mock: MOCK_STANDARD_KERNELS }, deferred: true, rangesShareBytes: false },
);

describeStreamFailureContract("mock", () => new MockBackend(), {
  kernels: {
    mock: {
      ...MOCK_STANDARD_KERNELS,
      fail: {
        parameters: ["i32"],
        run([code]) {
          throw new Error(`asked to fail with ${code}`);
        },
      },
    },
  },
  failing: { name: "fail", parameters: ["i32"], args: [{ kind: "i32", value: 9 }] },
});
