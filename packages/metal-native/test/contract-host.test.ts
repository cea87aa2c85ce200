// The NativeBackend contract (@nuvec/native-core's test/contract.ts, shared with the mock) against the real addon: its host layer
// on Linux, its Metal layer on macOS (.github/workflows/macos.yml; never run on the machines it was written on).
// NUVEC_CONTRACT_ADDON=<file.node> runs it against that addon file instead (a prebuilt binary before it is
// packed: scripts/run-contract.mjs, which also bundles this file to run under qemu without vitest).
import { createRequire } from "node:module";
import { describeNativeBackendContract } from "@nuvec/native-core/contract";
import { describe, expect, it } from "vitest";
import { readOwnMemory } from "../../native-core/test/support.js";
import { openNativeBackendFile } from "../src/addon/loader.js";
import { loadNativeBackend } from "../src/index.js";
import { canLockWithoutLimit, lockedBytes, lockLimit } from "./host-support.js";

const addonFile = process.env.NUVEC_CONTRACT_ADDON;
const openBackend = addonFile ? () => openNativeBackendFile(addonFile) : () => loadNativeBackend();
const which = addonFile ? ` from ${addonFile}` : "";

if (process.platform === "linux") {
  // Views are V8 backing stores on the Node.js major the addon was built for, Node-API's on any other (the
  // fallback's suite is contract-host-node-api.test.ts).
  describe.runIf(!addonFile && !process.env.NUVEC_VIEWS)("the addon built here", () => {
    it("makes its views as V8 backing stores on the Node.js major it was built for, else Node-API's", () => {
      const raw = createRequire(import.meta.url)("../native/build/Release/nuvec_metal_native.node") as {
        viewMechanismBuiltFor: number;
      };
      const major = Number(process.versions.node.split(".")[0]);
      expect(raw.viewMechanismBuiltFor).toBeGreaterThan(0);
      expect(loadNativeBackend().viewMechanism).toBe(
        raw.viewMechanismBuiltFor === major ? "backing-store" : "node-api",
      );
    });
  });
  describeNativeBackendContract(`host addon (real memory, mlock)${which}`, openBackend, {
    realMemory: true,
    // Past RLIMIT_MEMLOCK wiring fails, unless the process may lock without limit (root, CAP_IPC_LOCK): then
    // there is no way to make it fail here and the test is skipped (test/host.test.ts does it in a child).
    failingWiring: (backend) => {
      const limit = lockLimit();
      if (canLockWithoutLimit() || !Number.isFinite(limit)) return undefined;
      return backend.newBuffer(limit + backend.pageSize);
    },
    cycles: 200,
    readMemory: readOwnMemory,
    lockedBytes,
  });
} else if (process.platform === "darwin") {
  // Metal does not report wiring failures: that test is skipped.
  describeNativeBackendContract(`Metal addon${which}`, openBackend, { realMemory: true, cycles: 100 });
} else {
  describe.skip(`native addon: no native backend for ${process.platform}`, () => {});
}
