// A mapping whose view was moved to a worker goes back to the system after the worker ends, with no further
// call into the Device (the quarantine's unref'd sweep), and the Device does not keep the process alive. On
// the host backend, in a child process (a worker, transfer(), the collector).
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { childUnavailableReason, runChild } from "./support.js";

const skipReason = childUnavailableReason();
const scratch = scratchFolder("nuvec-worker-unmap-");
const LENGTH = 100_000;

describe.skipIf(skipReason !== undefined || process.platform !== "linux")(
  `a view moved to a worker${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    it("its mapping is unmapped after the worker ends, without the Device's next call; the process exits unclosed", () => {
      const path = scratch.write("moved.bin", new Uint8Array(LENGTH).fill(7));
      const { status, signal, stderr, report } = runChild("worker-unmap.mjs", {
        args: [path],
        nodeOptions: ["--harmony-rab-gsab-transfer", "--expose-gc"],
        timeout: 20_000,
      });
      expect({ status, signal, stderr }).toEqual({ status: 0, signal: null, stderr: "" });
      const { allocatedLength } = report as { allocatedLength: number };
      expect(allocatedLength % 4096).toBe(0);
      expect(report).toEqual({
        seen: LENGTH,
        mappedAfterFree: 1,
        // The mapped length (whole pages), counted until the backend gives it back.
        quarantinedAfterFree: allocatedLength,
        allocatedLength,
        mappedAfterWorker: 0,
        sweptWithin2s: true,
        quarantinedAtEnd: 0,
      });
    });
  },
);
