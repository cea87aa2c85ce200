import { replayTrace, type TraceEvent } from "@nuvec/allocator";
import { describe, expect, it } from "vitest";
import { replayForView } from "./replay.js";

describe("a trace's own labels in the view", () => {
  it("each labelled allocation indexes the trace's labels (in order of definition); others have none", async () => {
    const items = [
      { name: "labelled" },
      ["n", 7, "weights.bin"],
      ["m", 0, 4096, 7],
      ["k", "step 0"],
      ["n", 3, "kv-cache"],
      ["a", 0, 100, 3],
      ["s", 0, ["at step (decode.js:1:1)"]],
      ["a", 1, 200, null, 0],
      ["a", 2, 300, 7],
      ["f", 0],
    ];
    const result = await replayForView([items], { policies: ["bounded"], record: true });
    expect(result.labels).toEqual(["weights.bin", "kv-cache"]);
    expect([...(result.workload?.label ?? [])]).toEqual([1, -1, 0]);
    // The annotations change no figure: the allocator's replay of the same trace.
    const replayed = replayTrace(items as unknown as TraceEvent[], { policy: "bounded" });
    expect(result.outcomes[0]?.stats.active).toBe(replayed.stats.active);
    expect(result.outcomes[0]?.stats.mapped).toBe(replayed.stats.mapped);
  });
});
