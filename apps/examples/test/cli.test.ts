// The example programs end to end, from their built files (the test task builds first).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ALLOCATOR_POLICIES } from "@nuvec/allocator";
import { MEMORY_STATS_FIELDS } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { app, longestLine, run, safetensorsFile, scratchFolder, shippedTrace, traceFile } from "./support.js";

const folder = scratchFolder("nuvec-examples-");
/** The figures replay --json prints for a policy. */
const FIGURES = [...MEMORY_STATS_FIELDS, "events", "cacheHits", "peakReserved", "peakLive"];
const replayJson = (args: string[]) => JSON.parse(run("replay", [shippedTrace, "--json", ...args]).stdout);

describe("replay", () => {
  it("prints one JSON object with every MemoryStats field and the counters", () => {
    const { status, stdout } = run("replay", [shippedTrace, "--json"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    for (const field of [...FIGURES, "nsPerEvent"]) {
      expect(result, field).toHaveProperty(field);
    }
    expect(result.events).toBe(24000);
    expect(result.policy).toBe("bounded");
    expect(result.memoryLimit).toBe(12 * 1024 ** 3);
    expect(result.cacheHits + result.systemAllocations).toBe(12097);
  });

  it("applies --cache-limit and --memory-limit with suffixes, and writes an HTML report, its folders made", () => {
    const html = join(folder, "made", "for", "the", "replay.html");
    const result = replayJson(["--cache-limit", "64MiB", "--memory-limit=8GiB", "--html", html]);
    expect(result.cacheLimit).toBe(64 * 1024 ** 2);
    expect(result.memoryLimit).toBe(8 * 1024 ** 3);
    expect(result.cache).toBeLessThanOrEqual(64 * 1024 ** 2);
    const page = readFileSync(html, "utf8");
    expect(page).toContain('id="nuvec-chart"');
    expect(page).toContain('id="nuvec-data"');
    // Self-contained: no script or stylesheet from elsewhere.
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it("replays a recorded trace with mappings and limit changes", () => {
    const path = traceFile(join(folder, "recorded.ndjson.gz"), [
      { name: "recorded", events: 7 },
      ["a", 0, 1000],
      ["m", 0, 100000],
      ["l", "cache", 0],
      ["f", 0],
      ["p"],
      ["u", 0],
      ["c"],
    ]);
    const { status, stdout } = run("replay", [path, "--json"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ active: 0, cache: 0, mapped: 0, cacheLimit: 0, systemAllocations: 1 });
    // resetPeak came while the 7-page mapping (100000 bytes in 16 KiB pages) was live.
    expect(result.peakActiveWithMapped).toBe(7 * 16384);
  });

  it("compares every policy the allocator has, in one pass, with the figures of each replayed alone", () => {
    const result = replayJson(["--compare", "all"]);
    expect(result.policies.map((policy: { policy: string }) => policy.policy)).toEqual([
      ...ALLOCATOR_POLICIES,
    ]);
    const alone = Object.fromEntries(
      ALLOCATOR_POLICIES.map((name) => [name, replayJson([`--policy=${name}`])]),
    );
    for (const compared of result.policies) {
      for (const field of ["policy", ...FIGURES])
        expect(compared[field], `${compared.policy} ${field}`).toBe(alone[compared.policy][field]);
    }
    // The bounded policy (the default) makes fewer system allocations than MLX's, within its ratio (1.2) of
    // the live bytes; so does its largest-first release, at the ratio given.
    const { bounded, mlx } = alone;
    const largest = replayJson(["--policy=bounded", "--bounded-release=largest", "--reserve-ratio=1.1"]);
    expect([largest.policy, bounded.peakLive]).toEqual(["bounded", mlx.peakLive]);
    expect(bounded.systemAllocations).toBeLessThan(mlx.systemAllocations);
    expect(bounded.peakReserved).toBeLessThanOrEqual(1.2 * bounded.peakLive);
    expect(largest.peakReserved).toBeLessThanOrEqual(1.1 * largest.peakLive);
    const table = run("replay", [shippedTrace, "--compare", ALLOCATOR_POLICIES.join(",")]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/peak reserved/);
    expect(longestLine(table.stdout)).toBeLessThanOrEqual(80);
  });

  it("replays a PyTorch snapshot: its device, its skipped frees and PyTorch's own peak reserved", () => {
    const snapshot = join(app, "traces", "toy-train.pickle");
    const figures = JSON.parse(readFileSync(join(app, "traces", "toy-train.figures.json"), "utf8"));
    const { status, stdout } = run("replay", [snapshot, "--compare", "all", "--json", "--device", "1"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.events).toBe(figures["1"].allocations + figures["1"].frees);
    expect(result.pytorch).toMatchObject({
      device: 1,
      devices: [0, 1],
      peakReserved: figures["1"].peakReserved,
    });
    const text = run("replay", [snapshot]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(
      `${figures["0"].skippedFrees} frees of blocks allocated before recording skipped`,
    );
  });
});

describe("demo", () => {
  it("maps, wires, replays and writes its report on the real device; piped, short and within 80 columns", () => {
    const report = join(folder, "demo.html");
    const { status, stdout, stderr } = run("demo", ["--checkpoint-size", "24MiB", "--report", report]);
    expect(stderr).toBe("");
    expect(status).toBe(0);
    for (const title of ["after mapping the checkpoint", "after wiring", "after the workload"]) {
      expect(stdout).toContain(`${title}, what changed:`);
    }
    expect(stdout).toMatch(/mapped .*model\.safetensors: \d+ tensors/);
    expect(stdout).toContain("peakActiveWithMapped");
    expect(readFileSync(report, "utf8")).toContain('id="nuvec-chart"');
    expect(longestLine(stdout)).toBeLessThanOrEqual(80);
    expect(stdout).not.toContain("| memoryLimit");
    expect(stdout.split("\n").length).toBeLessThan(64);
  });

  it("--verbose adds the full tables, still within 80 columns", () => {
    const args = ["--checkpoint-size", "24MiB", "--report", join(folder, "verbose.html"), "--verbose"];
    const verbose = run("demo", args);
    expect(verbose.status).toBe(0);
    expect(longestLine(verbose.stdout)).toBeLessThanOrEqual(80);
    expect(verbose.stdout).toContain("| after the workload");
    expect(verbose.stdout).toContain("| memoryLimit");
  });
});

describe("checkpoint", () => {
  it("lists the tensors of a safetensors file without copying it", () => {
    const path = join(folder, "tiny.safetensors");
    const header = { w: { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] } };
    const headerLength = safetensorsFile(path, header, 16);
    const { status, stdout } = run("checkpoint", [path, "--json"]);
    expect(status).toBe(0);
    expect(JSON.parse(stdout).tensors).toEqual([
      { name: "w", dtype: "F32", shape: [2, 2], offset: 8 + headerLength, byteLength: 16 },
    ]);
  });
});
