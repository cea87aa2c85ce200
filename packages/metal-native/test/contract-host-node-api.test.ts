// The NativeBackend contract against the real addon with its views made the fallback way (Node-API's
// external ArrayBuffers, as on a Node.js major the addon was not built for): NUVEC_VIEWS=node-api, read by the
// addon when it loads, so it is set before this file loads it (each test file runs in a process of its own).
// contract-host.test.ts runs the same suite with V8's backing stores.
import { describeNativeBackendContract } from "@nuvec/native-core/contract";
import { describe, expect, it } from "vitest";
import { readOwnMemory } from "../../native-core/test/support.js";

process.env.NUVEC_VIEWS = "node-api";
const { loadNativeBackend } = await import("../src/index.js");

if (process.platform === "linux") {
  describe("the addon's fallback views", () => {
    it("are Node-API's when NUVEC_VIEWS=node-api", () => {
      expect(loadNativeBackend().viewMechanism).toBe("node-api");
    });
  });
  describeNativeBackendContract("host addon, Node-API views", () => loadNativeBackend(), {
    realMemory: true,
    cycles: 200,
    readMemory: readOwnMemory,
  });
} else {
  describe.skip(`native addon: no native backend for ${process.platform}`, () => {});
}
