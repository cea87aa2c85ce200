// A decode loop of a tiny transformer on nuvec streams: the weights written with writeSafetensors and mapped
// with mapSafetensors, copied into device memory on a second stream; per token a few kernels on the compute
// stream, activations freed in stream order, a KV cache per layer that grows (its old rows copied on the copy
// stream); then the memory report. The same decode in TypeScript checks every token and every logit.
import { join } from "node:path";
import { mapSafetensors, writeSafetensors } from "@nuvec/device";
import { formatBytes, printable } from "@nuvec/stats";
import { type CommandLine, JSON_FLAG, readCommandLine, runProgram, UsageError } from "./lib/arguments.js";
import { DECODE_BACKENDS, type DecodeBackend, openDecodeDevice } from "./lib/decode-device.js";
import { DEFAULT_SHAPE, modelWeights, referenceDecode } from "./lib/decode-model.js";
import { decodeOnDevice } from "./lib/decode-run.js";
import { statsTable } from "./lib/tables.js";
import { temporaryFolder } from "./lib/temporary.js";

const commandLine: CommandLine = {
  synopsis: "decode [flags]",
  description:
    "Decodes tokens with a tiny transformer on nuvec streams (CUDA, the host's kernel addon, or the mock's TypeScript kernels), checks them against the same arithmetic in TypeScript, and prints the memory report.",
  flags: [
    { name: "steps", value: "N", help: "tokens to decode", defaultText: "16" },
    { name: "backend", value: "NAME", help: `${DECODE_BACKENDS.join(", ")}`, defaultText: "auto" },
    {
      name: "weights",
      value: "FILE",
      help: "where to write the checkpoint",
      defaultText: "a temporary file",
    },
    JSON_FLAG,
  ],
};

/** The largest difference between two lists of logits (0 when they are equal bit for bit, NaN aside). */
function largestDifference(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  let largest = 0;
  for (const [step, values] of a.entries()) {
    const other = b[step] as Float32Array;
    for (const [index, value] of values.entries()) {
      const difference = Math.abs(value - (other[index] as number));
      if (!(difference <= largest)) largest = difference;
    }
  }
  return largest;
}

/** Logits may differ by this much where a backend's `exp` rounds otherwise than JavaScript's; tokens may not. */
const TOLERANCE = 1e-4;

async function main(argv: string[]): Promise<number> {
  const flags = readCommandLine(argv, commandLine)?.flags;
  if (flags === undefined) return 0;
  const steps = Number(flags.get("steps") ?? "16");
  if (!Number.isSafeInteger(steps) || steps <= 0 || steps > 4096) {
    throw new UsageError(`--steps: "${flags.get("steps")}" is not a whole number from 1 to 4096`);
  }
  const backend = (flags.get("backend") ?? "auto") as DecodeBackend;
  if (!DECODE_BACKENDS.includes(backend)) {
    throw new UsageError(`--backend: "${backend}" is not one of ${DECODE_BACKENDS.join(", ")}`);
  }
  const shape = DEFAULT_SHAPE;
  const weights = modelWeights(shape);
  const scratch = flags.has("weights") ? undefined : temporaryFolder("nuvec-decode-");
  try {
    const path = flags.get("weights") ?? join((scratch as { path: string }).path, "tiny.safetensors");
    const fileBytes = writeSafetensors(
      path,
      weights.map(({ name, rows, columns, values }) => ({
        name,
        dtype: "F32",
        shape: [rows, columns],
        data: values,
      })),
      { metadata: { model: "nuvec tiny decode", layers: String(shape.layers) } },
    );
    const first = 1;
    const reference = referenceDecode(shape, weights, first, steps);
    const opened = await openDecodeDevice(backend);
    using device = opened.device;
    let outcome: Awaited<ReturnType<typeof decodeOnDevice>>;
    {
      using checkpoint = mapSafetensors(device, path);
      outcome = await decodeOnDevice(device, opened.module, checkpoint, {
        shape,
        steps,
        first,
        initialCapacity: 4,
      });
    }
    opened.module.release();
    const stats = device.memoryStats();
    const counters = device.counters();
    const difference = largestDifference(outcome.logits, reference.logits);
    const tokensMatch = outcome.tokens.every((token, index) => token === reference.tokens[index]);
    const ok =
      tokensMatch &&
      difference <= TOLERANCE &&
      (opened.backend !== "mock" || difference === 0) &&
      counters.streamPending.buffers === 0 &&
      stats.active === 0;
    const report = {
      backend: opened.backend,
      device: device.native.backend.name,
      passedOver: opened.passedOver,
      shape,
      steps,
      checkpointBytes: fileBytes,
      tokens: outcome.tokens,
      referenceTokens: reference.tokens,
      tokensMatch,
      largestLogitDifference: difference,
      launches: outcome.launches,
      cacheGrowths: outcome.cacheGrowths,
      finalCacheRows: outcome.finalCapacity,
      weightTensors: outcome.weightTensors,
      peakStreamPending: outcome.peakStreamPending,
      pendingAtEnd: outcome.pendingAtEnd,
      streamPending: counters.streamPending,
      cacheHits: counters.cacheHits,
      cacheMisses: counters.cacheMisses,
      memoryStats: stats,
      ok,
    };
    if (flags.has("json")) {
      console.log(JSON.stringify(report));
      return ok ? 0 : 1;
    }
    const yes = (value: boolean) => (value ? "yes" : "NO");
    const pending = ({ buffers, bytes }: { buffers: number; bytes: number }) =>
      `${buffers} buffers, ${formatBytes(bytes)}`;
    const row = (label: string, value: string | number) => console.log(`  ${label.padEnd(52)} ${value}`);
    console.log(`decode on ${printable(report.device, 50)} (${opened.backend} backend)`);
    // The reasons come from outside (a library's error): escaped, and cut to fit 80 columns.
    for (const { backend: other, why } of opened.passedOver) {
      console.log(`  (not ${other}: ${printable(why, 79 - 10 - other.length)})`);
    }
    console.log(
      `  model: ${shape.layers} layers, width ${shape.width}, hidden ${shape.hidden}, vocabulary ${shape.vocabulary}; checkpoint ${formatBytes(fileBytes)}`,
    );
    console.log(`  tokens: ${outcome.tokens.join(" ")}`);
    row("the same tokens as the TypeScript decode", yes(tokensMatch));
    row("largest difference of a logit", difference);
    row("weight tensors copied from the mapping (copy stream)", outcome.weightTensors);
    row("kernels launched (compute stream)", outcome.launches);
    row(`KV cache growths (to ${outcome.finalCapacity} rows a layer)`, outcome.cacheGrowths);
    row("streamPending after a growth, at most", pending(outcome.peakStreamPending));
    row("streamPending once everything was freed", pending(outcome.pendingAtEnd));
    row("streamPending after device.synchronize()", pending(counters.streamPending));
    row("cache hits, misses", `${counters.cacheHits}, ${counters.cacheMisses}`);
    console.log(statsTable(stats, "memory at the end (every buffer freed)"));
    return ok ? 0 : 1;
  } finally {
    scratch?.remove();
  }
}

await runProgram("decode", () => main(process.argv.slice(2)));
