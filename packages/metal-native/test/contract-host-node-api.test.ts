// The NativeBackend contract against the real addon with its views made the fallback way (Node-API's
// external ArrayBuffers, as on a Node.js major the addon was not built for): NUVEC_VIEWS=node-api, read by the
// addon when it loads, so it is set before this file loads it (each test file runs in a process of its own).
// contract-host.test.ts runs the same suite with V8's backing stores.

import { constants } from "node:buffer";
import { describeNativeBackendContract } from "@nuvec/native-core/contract";
import { OutOfMemoryError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { readOwnMemory } from "../../native-core/test/support.js";
import { lockedBytes } from "./host-support.js";

process.env.NUVEC_VIEWS = "node-api";
const { loadNativeBackend } = await import("../src/index.js");

if (process.platform === "linux") {
  describe("the addon's fallback views", () => {
    it("are Node-API's when NUVEC_VIEWS=node-api", () => {
      expect(loadNativeBackend().viewMechanism).toBe("node-api");
    });

    // Node.js 20 refuses a Buffer over 4 GiB (calling the view's finalizer at once): the view that could
    // not be made leaves no record and no hint behind, and the buffer is freed as usual.
    const fiveGiB = 5 * 1024 ** 3;
    it.runIf(constants.MAX_LENGTH < fiveGiB && loadNativeBackend().maxBufferLength > fiveGiB)(
      "a view Node-API refuses is a typed error that leaves nothing behind",
      () => {
        const backend = loadNativeBackend();
        const before = backend.counters();
        const buffer = backend.newBuffer(fiveGiB);
        expect(() => buffer.contents()).toThrow(OutOfMemoryError);
        expect(backend.viewBookkeeping()).toMatchObject({ records: 0, listed: 0 });
        buffer.detachContents();
        expect(buffer.quarantined).toBe(false);
        buffer.release();
        const after = backend.counters();
        expect((after.buffersFreedByPlatform ?? 0) - (before.buffersFreedByPlatform ?? 0)).toBe(1);
        expect(after.quarantinedBytes).toBe(before.quarantinedBytes);
      },
    );
  });
  describeNativeBackendContract("host addon, Node-API views", () => loadNativeBackend(), {
    realMemory: true,
    cycles: 200,
    readMemory: readOwnMemory,
    lockedBytes,
  });
} else {
  describe.skip(`native addon: no native backend for ${process.platform}`, () => {});
}
