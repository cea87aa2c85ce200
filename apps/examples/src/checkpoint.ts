// Maps a safetensors checkpoint without a copy, lists its tensors, and shows that the process's resident
// memory did not grow by the file's size.
import { Device } from "@nuvec/device";
import { formatBytes } from "@nuvec/stats";
import { parseArguments, UsageError } from "./lib/arguments.js";
import { processMemory } from "./lib/process-memory.js";
import { parseSafetensors } from "./lib/safetensors.js";

const usage = "usage: checkpoint FILE.safetensors [--json]";

function main(argv: string[]): number {
  const { flags, positionals } = parseArguments(argv, { values: [], booleans: ["json", "help"] });
  if (flags.has("help")) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("give one safetensors file");
  using device = Device.open();
  const before = processMemory();
  using file = device.mapFile(positionals[0] as string);
  const header = parseSafetensors(file.contents());
  const after = processMemory();
  const total = header.tensors.reduce((sum, tensor) => sum + tensor.byteLength, 0);
  if (flags.has("json")) {
    console.log(
      JSON.stringify({
        path: file.path,
        length: file.length,
        mappedLength: file.mappedLength,
        tensors: header.tensors,
        metadata: header.metadata,
        residentBefore: before?.resident,
        residentAfter: after?.resident,
      }),
    );
    return 0;
  }
  console.log(
    `${file.path}: ${formatBytes(file.length)}, ${header.tensors.length} tensors, ${formatBytes(total)} of data`,
  );
  const width = Math.max(4, ...header.tensors.map((tensor) => tensor.name.length));
  console.log(`  ${"name".padEnd(width)}  dtype  ${"shape".padEnd(20)}  ${"bytes".padStart(11)}`);
  for (const tensor of header.tensors) {
    console.log(
      `  ${tensor.name.padEnd(width)}  ${tensor.dtype.padEnd(5)}  ${`[${tensor.shape.join(", ")}]`.padEnd(20)}  ${formatBytes(tensor.byteLength).padStart(11)}`,
    );
  }
  if (before && after) {
    console.log(
      `resident memory: ${formatBytes(before.resident)} before mapping, ${formatBytes(after.resident)} after (the file is ${formatBytes(file.length)}: mapped, not copied)`,
    );
  }
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  const code = (error as { code?: string }).code;
  console.error(`checkpoint: ${(error as Error).message}${code ? ` (${code})` : ""}`);
  if (error instanceof UsageError) console.error(usage);
  process.exitCode = 2;
}
