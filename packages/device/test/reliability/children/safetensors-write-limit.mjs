// Run by hostile-safetensors.test.ts under a file size limit (RLIMIT_FSIZE) smaller than the checkpoint:
// writeSafetensors over an existing file must fail with the family's SystemCallError, leave that file as it
// was and no temporary file beside it. Prints one JSON line.
import { readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { writeSafetensors } from "@nuvec/device";

const path = process.argv[2];
const before = readFileSync(path);
let error;
try {
  writeSafetensors(path, [
    { name: "w", dtype: "F32", shape: [256, 1024], data: new Float32Array(256 * 1024).fill(1) },
  ]);
} catch (caught) {
  error = caught;
}
console.log(
  JSON.stringify({
    error: error && {
      name: error.name,
      code: error.code,
      syscall: error.syscall,
      errno: error.errno,
      path: error.path,
    },
    unchanged: readFileSync(path).equals(before),
    folder: readdirSync(dirname(path)),
  }),
);
