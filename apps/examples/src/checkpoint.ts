// Maps a safetensors checkpoint without a copy, lists its tensors, and shows that the process's resident
// memory did not grow by the file's size.
import { Device, mapSafetensors } from "@nuvec/device";
import { formatBytes, printable } from "@nuvec/stats";
import { type CommandLine, JSON_FLAG, readCommandLine, runProgram, UsageError } from "./lib/arguments.js";
import { processMemory } from "./lib/process-memory.js";

const commandLine: CommandLine = {
  synopsis: "checkpoint FILE.safetensors [flags]",
  description:
    "Maps a safetensors checkpoint without a copy, lists its tensors from its header, and shows that the process's resident memory did not grow by the file's size.",
  flags: [JSON_FLAG],
};

/** `text` cut from the left to `width` characters (a tensor name's end tells tensors apart). */
function fitStart(text: string, width: number): string {
  // Escaped too: names and paths come from outside the program.
  return printable(text, width, true);
}

function main(argv: string[]): number {
  const parsed = readCommandLine(argv, commandLine);
  if (parsed === undefined) return 0;
  const { flags, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError("give one safetensors file");
  using device = Device.open();
  const before = processMemory();
  // The header is read from the file, not through the mapping: a file truncated meanwhile cannot fault.
  using checkpoint = mapSafetensors(device, positionals[0] as string);
  const { file, header } = checkpoint;
  const after = processMemory();
  const total = header.tensors.reduce((sum, tensor) => sum + tensor.byteLength, 0);
  if (flags.has("json")) {
    console.log(
      JSON.stringify({
        path: file.path,
        length: file.length,
        allocatedLength: file.allocatedLength,
        tensors: header.tensors,
        metadata: header.metadata,
        residentBefore: before?.resident,
        residentAfter: after?.resident,
      }),
    );
    return 0;
  }
  const summary = `: ${formatBytes(file.length)}, ${header.tensors.length} tensors, ${formatBytes(total)} of data`;
  console.log(`${fitStart(file.path, 79 - summary.length)}${summary}`);
  // Every row fits 80 columns: long names are cut from the left.
  const shapes = header.tensors.map((tensor) => `[${tensor.shape.join(", ")}]`);
  const shapeWidth = Math.min(20, Math.max(5, ...shapes.map((shape) => shape.length)));
  const width = Math.min(
    79 - (2 + 2 + 5 + 2 + shapeWidth + 2 + 11),
    Math.max(4, ...header.tensors.map((tensor) => tensor.name.length)),
  );
  console.log(`  ${"name".padEnd(width)}  dtype  ${"shape".padEnd(shapeWidth)}  ${"bytes".padStart(11)}`);
  for (const [index, tensor] of header.tensors.entries()) {
    const shape = fitStart(shapes[index] ?? "", shapeWidth).padEnd(shapeWidth);
    console.log(
      `  ${fitStart(tensor.name, width).padEnd(width)}  ${printable(tensor.dtype, 5).padEnd(5)}  ${shape}  ${formatBytes(tensor.byteLength).padStart(11)}`,
    );
  }
  if (before && after) {
    console.log(
      `resident memory: ${formatBytes(before.resident)} before mapping, ${formatBytes(after.resident)} after`,
    );
    console.log(`(the file is ${formatBytes(file.length)}: mapped, not copied)`);
  }
  return 0;
}

await runProgram("checkpoint", () => main(process.argv.slice(2)));
