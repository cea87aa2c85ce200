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

describe("definitions on the view's event axis", () => {
  it("labels, stacks and marks advance no event: the axis counts allocations, frees and maps", async () => {
    const items = [
      { name: "defined" },
      ["n", 7, "weights.bin"],
      ["m", 0, 4096, 7],
      ["k", "step 0"],
      ["n", 3, "kv-cache"],
      ["a", 1, 100, 3],
      ["s", 0, ["at step (decode.js:1:1)"]],
      ["a", 2, 200, null, 0],
      ["k", "step 1"],
      ["f", 1],
      ["a", 3, 300, 7],
    ];
    const result = await replayForView([items], { policies: ["bounded"], record: true });
    const workload = result.workload;
    // Five events: "m", "a", "a", "f", "a"; the two marks stand before events 1 and 3.
    expect(workload?.events).toBe(5);
    expect([...(workload?.start ?? [])]).toEqual([1, 2, 4]);
    expect([...(workload?.end ?? [])]).toEqual([3, 5, 5]);
    expect([...(workload?.marks?.at ?? [])]).toEqual([1, 3]);
    expect(workload?.marks?.names).toEqual(["step 0", "step 1"]);
    expect([...(workload?.mapped?.at ?? [])]).toEqual([0]);
    expect([...(workload?.policies[0]?.reservedAt ?? [])].every((at) => at < 5)).toBe(true);
  });
});
