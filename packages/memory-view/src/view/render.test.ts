// The memory view's HTML: self-contained, hostile text from a trace stays text, and the embedded workload
// decodes to the arrays it was made from.
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { WorkloadRecorder } from "./recorder.js";
import { renderMemoryView } from "./render.js";

const hostile = `</script><img src=x onerror="alert(1)">&'`;

function workload() {
  const recorder = new WorkloadRecorder(["mlx", "bounded"]);
  recorder.allocate(7, 1000, [1024, 1024], 0);
  recorder.endEvent([1024, 1024]);
  recorder.allocate(9, 5000, [5120, 8192], -1);
  recorder.endEvent([6144, 9216]);
  recorder.free(7);
  recorder.endEvent([6144, 9216]);
  return recorder.finish();
}

describe("renderMemoryView", () => {
  const recorded = workload();
  const html = renderMemoryView({
    title: hostile,
    subtitle: hostile,
    workload: recorded,
    labels: [hostile],
    figures: { columns: [hostile], rows: [{ label: hostile, values: [hostile, 12], bytes: true }] },
    peaks: [
      { active: 6144, reserved: 6144 },
      { active: 9216, reserved: 9216 },
    ],
    facts: [[hostile, hostile]],
  });

  it("records the workload: events, allocations in order, what each policy charged, reserved where it changed", () => {
    expect(recorded.events).toBe(3);
    expect([...recorded.start]).toEqual([0, 1]);
    expect([...recorded.end]).toEqual([2, 3]);
    expect([...recorded.size]).toEqual([1000, 5000]);
    expect([...recorded.label]).toEqual([0, -1]);
    expect([...(recorded.policies[1]?.charged ?? [])]).toEqual([1024, 8192]);
    expect([...(recorded.policies[1]?.reservedAt ?? [])]).toEqual([0, 1]);
    expect([...(recorded.policies[1]?.reservedValue ?? [])]).toEqual([1024, 9216]);
  });

  it("is one file: uPlot and the view inlined, nothing fetched", () => {
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain("uPlot");
    expect(html).toContain("Leon Sorokin");
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|@import/);
  });

  it("keeps hostile text as text", () => {
    expect(html).not.toContain("<img");
    expect(html).not.toMatch(/<\/script><img/);
    // Only the page's own script elements close.
    expect(html.match(/<\/script>/g)?.length).toBe(html.match(/<script/g)?.length);
  });

  it("embeds the arrays it was given, gzipped", () => {
    const meta = JSON.parse(
      html.match(/<script type="application\/json" id="nuvec-meta">([^<]*)<\/script>/)?.[1] ?? "",
    );
    const data =
      html.match(/<script type="application\/octet-stream" id="nuvec-data">([^<]*)<\/script>/)?.[1] ?? "";
    const blob = gunzipSync(Buffer.from(data, "base64"));
    const types = { Float64Array, Int32Array, Uint8Array, Uint32Array };
    const array = (name: string) => {
      const [, type, offset, length] = meta.layout.find((entry: [string]) => entry[0] === name);
      const Type = types[type as keyof typeof types];
      const bytes = blob.subarray(offset, offset + length * Type.BYTES_PER_ELEMENT);
      return [...new Type(new Uint8Array(bytes).buffer)];
    };
    expect(meta.events).toBe(3);
    expect(meta.policies).toEqual(["mlx", "bounded"]);
    expect(meta.title).toBe(hostile);
    expect(array("size")).toEqual([1000, 5000]);
    // Event indices as differences: each start less the one before, each end less its start.
    const coding = (name: string) => meta.layout.find((entry: [string]) => entry[0] === name)[4];
    expect([coding("start"), coding("end"), coding("reservedAt0"), coding("size")]).toEqual([
      "delta",
      "after:start",
      "delta",
      undefined,
    ]);
    expect(array("start")).toEqual([0, 1]);
    expect(array("end")).toEqual([2, 2]);
    expect(array("reservedAt0")).toEqual([0, 1]);
    expect(array("charged1")).toEqual([1024, 8192]);
    expect(array("reservedValue0")).toEqual([1024, 6144]);
    expect(JSON.parse(Buffer.from(array("labels")).toString("utf8"))).toEqual([hostile]);
  });
});
