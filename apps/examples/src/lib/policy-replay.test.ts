import { replayForView } from "@nuvec/memory-view";
import { describe, expect, it } from "vitest";
import { deviceFromHeader, replayPolicies } from "./policy-replay.js";

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

/** A Device's header: the facts its `allocator` field records. */
const header = {
  name: "recorded",
  device: "Apple M2",
  allocator: {
    policy: "bounded",
    workingSet: 2 * GiB,
    memorySize: 3 * GiB,
    maxBufferLength: GiB,
    resourceLimit: 1000,
    pageSize: 16384,
    memoryLimit: 1536 * MiB,
    cacheLimit: 256 * MiB,
  },
};

const items = [
  header,
  ["n", 4, "weights.bin"],
  ["m", 0, 64 * MiB, 4],
  ["k", "step 0"],
  ["n", 5, "kv-cache"],
  ["a", 1, 4 * MiB, 5],
  ["s", 0, ["at step (decode.js:1:1)"]],
  ["a", 2, MiB, null, 0],
  ["f", 1],
  ["u", 0],
];

describe("the examples' replay for the memory view", () => {
  it("runs on the device the header records, and names it", async () => {
    const result = await replayPolicies([items], { policies: ["bounded", "mlx"], record: true });
    // Every fact of the header's `allocator`, as recorded.
    expect(result.device).toEqual({ from: "header", name: "Apple M2", ...header.allocator });
    // A flag's value stands over the header's.
    expect(deviceFromHeader(header, { policies: ["mlx"], workingSet: 4 * GiB }).workingSet).toBe(4 * GiB);
    expect(deviceFromHeader(undefined, { policies: ["mlx"] })).toMatchObject({
      from: "default",
      workingSet: 8 * GiB,
      memorySize: 16 * GiB,
    });
  });

  it("records mapped files, labels and marks as the package's replay does; definitions take no event", async () => {
    const ours = await replayPolicies([items], { policies: ["bounded"], record: true });
    const theirs = await replayForView([items], { policies: ["bounded"], record: true });
    const workload = ours.workload;
    expect(workload?.events).toBe(5);
    expect([...(workload?.mapped?.at ?? [])]).toEqual([0, 4]);
    expect([...(workload?.mapped?.value ?? [])]).toEqual([64 * MiB, 0]);
    expect([...(workload?.marks?.at ?? [])]).toEqual([1]);
    expect(ours.labels).toEqual(["weights.bin", "kv-cache"]);
    expect([...(workload?.label ?? [])]).toEqual([1, -1]);
    expect([...(workload?.start ?? [])]).toEqual([1, 2]);
    expect([...(workload?.end ?? [])]).toEqual([3, 5]);
    for (const key of ["start", "end", "size", "label"] as const)
      expect([...(workload?.[key] ?? [])]).toEqual([...(theirs.workload?.[key] ?? [])]);
    expect([...(workload?.mapped?.value ?? [])]).toEqual([...(theirs.workload?.mapped?.value ?? [])]);
  });
});
