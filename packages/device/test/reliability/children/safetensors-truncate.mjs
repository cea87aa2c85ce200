// Run by hostile-safetensors.test.ts: maps a checkpoint over and over (mapSafetensors, on the host backend)
// while a worker truncates it and writes it again in place, in a loop, and copies a tensor out of each with
// readTensor. Must never die of a signal (SIGBUS): each map and copy ends in a FormatError or the header and
// bytes as written. Prints one JSON line: how many of each, and any other error.
import { Worker } from "node:worker_threads";
import { Device, FormatError, mapSafetensors, writeSafetensors } from "@nuvec/device";

const [path, milliseconds] = [process.argv[2], Number(process.argv[3])];
// Tensors across several pages, a header of its own page's worth of names.
const tensors = Array.from({ length: 64 }, (_, index) => ({
  name: `model.layers.${index}.${"w".repeat(40)}`,
  dtype: "F32",
  shape: [256],
  data: new Float32Array(256).fill(index),
}));
const length = writeSafetensors(path, tensors);

const rewriter = new Worker(
  `const { openSync, ftruncateSync, readFileSync, writeSync } = require("node:fs");
   const { workerData } = require("node:worker_threads");
   const content = readFileSync(workerData);
   const descriptor = openSync(workerData, "r+");
   for (;;) {
     ftruncateSync(descriptor, 0);
     writeSync(descriptor, content, 0, content.length, 0);
   }`,
  { eval: true, workerData: path },
);

const device = Device.open();
const outcomes = { mapped: 0, copied: 0, formatErrors: 0, others: [] };
const fields = new Set();
const end = performance.now() + milliseconds;
while (performance.now() < end) {
  try {
    const checkpoint = mapSafetensors(device, path);
    try {
      if (checkpoint.file.length !== length || checkpoint.header.tensors.length !== 64) {
        outcomes.others.push(
          `mapped ${checkpoint.file.length} bytes, ${checkpoint.header.tensors.length} tensors`,
        );
      }
      outcomes.mapped += 1;
      // A copy read from the file, not through the mapping: the bytes as written, or a FormatError.
      const copied = new Float32Array(checkpoint.readTensor(`model.layers.7.${"w".repeat(40)}`).buffer);
      if (copied.length !== 256 || copied.some((value) => value !== 7))
        outcomes.others.push("a copy differs");
      outcomes.copied += 1;
    } finally {
      checkpoint[Symbol.dispose]();
    }
  } catch (error) {
    if (error instanceof FormatError) {
      outcomes.formatErrors += 1;
      fields.add(error.field);
    } else outcomes.others.push(`${error?.name} ${error?.code}: ${error?.message}`);
  }
}
await rewriter.terminate();
const stats = device.memoryStats();
device.close();
console.log(
  JSON.stringify({
    ...outcomes,
    others: outcomes.others.slice(0, 5),
    fields: [...fields].sort(),
    mappedAfter: stats.mapped,
  }),
);
