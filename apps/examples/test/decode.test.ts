// The decode program on the mock (its kernels in TypeScript): the tokens and logits of the TypeScript decode
// exactly, the KV cache grown on the copy stream, the old caches and the weights held in streamPending until
// both streams ran, every buffer freed at the end; and what it refuses.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { attention, matvec, referenceDecode } from "../src/lib/decode-model.js";
import { app, longestLine, run, scratchFolder } from "./support.js";

const folder = scratchFolder("nuvec-decode-test-");

function decode(args: string[]) {
  const result = run("decode", ["--backend", "mock", "--json", ...args]);
  expect(result.stderr).toBe("");
  return { status: result.status, report: JSON.parse(result.stdout) };
}

describe("decode", () => {
  it("decodes the TypeScript decode's tokens with its logits exactly, and frees everything", () => {
    const { status, report } = decode([]);
    expect(status).toBe(0);
    expect(report).toMatchObject({
      backend: "mock",
      steps: 16,
      tokens: [48, 49, 20, 38, 48, 63, 51, 26, 21, 0, 22, 31, 2, 57, 7, 22],
      tokensMatch: true,
      largestLogitDifference: 0,
      launches: 16 * (2 * 10 + 1),
      cacheGrowths: 4, // each layer at steps 4 and 8
      finalCacheRows: 16,
      weightTensors: 14,
      // After the second growth: four caches of 8 rows × 32 floats, named by both streams.
      peakStreamPending: { buffers: 4, bytes: 4 * 1024 },
      pendingAtEnd: { buffers: 18 },
      streamPending: { buffers: 0, bytes: 0 },
      ok: true,
    });
    expect(report.tokens).toEqual(report.referenceTokens);
    expect(report.memoryStats).toMatchObject({ active: 0, mapped: 0 });
    expect(report.cacheHits).toBeGreaterThan(report.cacheMisses);
  });

  it("prints a report that fits 80 columns", () => {
    const result = run("decode", ["--steps", "6"]);
    expect([result.status, result.stderr]).toEqual([0, ""]);
    expect(result.stdout).toContain("the same tokens as the TypeScript decode             yes");
    expect(result.stdout).toContain("streamPending after device.synchronize()             0 buffers, 0 B");
    expect(longestLine(result.stdout)).toBeLessThanOrEqual(80);
  });

  const hostKernels = join(app, "kernel", "build", "Release", "nuvec_example_kernel.node");
  it.skipIf(process.platform !== "linux" || !existsSync(hostKernels))(
    "decodes the same tokens with the same logits on the host's worker threads (the example addon's kernels)",
    () => {
      const result = run("decode", ["--backend", "host", "--json"]);
      expect([result.status, result.stderr]).toEqual([0, ""]);
      const report = JSON.parse(result.stdout);
      expect(report).toMatchObject({
        backend: "host",
        tokens: [48, 49, 20, 38, 48, 63, 51, 26, 21, 0, 22, 31, 2, 57, 7, 22],
        largestLogitDifference: 0,
        launches: 336,
        cacheGrowths: 4,
        pendingAtEnd: { buffers: 18 },
        streamPending: { buffers: 0, bytes: 0 },
        ok: true,
      });
      // How many old caches are still held right after a growth depends on how far the worker got.
      expect(report.peakStreamPending.buffers).toBeLessThanOrEqual(4);
    },
  );

  it("grows the cache only when it is full", () => {
    expect(decode(["--steps", "4"]).report).toMatchObject({
      cacheGrowths: 0,
      finalCacheRows: 4,
      peakStreamPending: { buffers: 0, bytes: 0 },
      ok: true,
    });
    expect(decode(["--steps", "5"]).report).toMatchObject({ cacheGrowths: 2, finalCacheRows: 8, ok: true });
  });

  it("writes the checkpoint where --weights says, and refuses what it cannot use", () => {
    const path = join(folder, "weights.safetensors");
    expect(decode(["--steps", "2", "--weights", path]).report).toMatchObject({
      checkpointBytes: 83_152,
      ok: true,
    });
    const directory = join(folder, "a-directory");
    mkdirSync(directory);
    const refused = run("decode", ["--backend", "mock", "--weights", directory]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/^decode: .*\(ERR_NUVEC_/);
    for (const [flags, message] of [
      [["--steps", "0"], 'decode: --steps: "0" is not a whole number from 1 to 4096 (see decode --help)\n'],
      [
        ["--backend", "gpu"],
        'decode: --backend: "gpu" is not one of auto, cuda, host, mock (see decode --help)\n',
      ],
    ] as const) {
      const result = run("decode", [...flags]);
      expect([result.status, result.stderr]).toEqual([2, message]);
    }
  });

  it("has a reference whose arithmetic is the textbook one, to single precision", () => {
    const out = new Float32Array(2);
    matvec(out, Float32Array.of(1, 2, 3, 4, 5, 6), Float32Array.of(1, 0.5, -1), 2, 3);
    expect([...out]).toEqual([-1, 0.5]);
    const attended = new Float32Array(2);
    // Two rows with scores 0 and ln 3 · … : weights 1/4 and 3/4.
    const keys = Float32Array.of(0, 0, Math.log(3), 0);
    attention(attended, Float32Array.of(1, 0), keys, Float32Array.of(4, 8, 0, 4), 1, 2, 2);
    expect(attended[0]).toBeCloseTo(1, 6);
    expect(attended[1]).toBeCloseTo(5, 6);
    const shape = { vocabulary: 4, width: 2, hidden: 2, layers: 1 };
    const identity = Float32Array.of(1, 0, 0, 1);
    const weights = [
      { name: "embedding", rows: 4, columns: 2, values: Float32Array.of(1, 0, 0, 1, -1, 0, 0, -1) },
      ...["q", "k", "v", "o"].map((part) => ({
        name: `layers.0.attention.${part}`,
        rows: 2,
        columns: 2,
        values: new Float32Array(4),
      })),
      { name: "layers.0.feed_forward.up", rows: 2, columns: 2, values: identity },
      { name: "layers.0.feed_forward.down", rows: 2, columns: 2, values: identity },
      { name: "output", rows: 4, columns: 2, values: Float32Array.of(0, 1, -1, 0, 0, -1, 1, 0) },
    ];
    // x = e[token]; the feed-forward block adds relu(x): token 0 → (2, 0) → logits (0, -2, 0, 2) → token 3.
    const { tokens, logits } = referenceDecode(shape, weights, 0, 3);
    expect([...(logits[0] as Float32Array)]).toEqual([0, -2, 0, 2]);
    expect(tokens).toEqual([3, 2, 1]); // then e[3] = (0, −1): logits (−1, 0, 1, 0); e[2] = (−1, 0): (0, 1, 0, −1)
  });
});
