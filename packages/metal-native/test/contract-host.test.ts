// The NativeBackend contract (test/contract.ts, shared with the mock) against the real addon: its host layer
// on Linux, its Metal layer on macOS (.github/workflows/macos.yml; never run on the machines it was written on).
import { describe } from "vitest";
import { loadNativeBackend } from "../src/index.js";
import { describeNativeBackendContract } from "./contract.js";
import { canLockWithoutLimit, lockLimit } from "./host-support.js";

if (process.platform === "linux") {
  describeNativeBackendContract("host addon (real memory, mlock)", () => loadNativeBackend(), {
    realMemory: true,
    // Past RLIMIT_MEMLOCK wiring fails, unless the process may lock without limit (root, CAP_IPC_LOCK): then
    // there is no way to make it fail here and the test is skipped (test/host.test.ts does it in a child).
    failingWiring: (backend) => {
      const limit = lockLimit();
      if (canLockWithoutLimit() || !Number.isFinite(limit)) return undefined;
      return backend.newBuffer(limit + backend.pageSize);
    },
    cycles: 200,
  });
} else if (process.platform === "darwin") {
  // Metal does not report wiring failures: that test is skipped.
  describeNativeBackendContract("Metal addon", () => loadNativeBackend(), { realMemory: true, cycles: 100 });
} else {
  describe.skip(`native addon: no native backend for ${process.platform}`, () => {});
}
