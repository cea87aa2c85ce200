// Helpers every backend's tests share (the mock's, the host's contract, CUDA's): said once here.
import { closeSync, openSync, readSync } from "node:fs";

export { thrown } from "../../stats/test/thrown.js";

/** Deterministic bytes (a linear congruential generator), so failures reproduce. */
export function patternBytes(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let state = seed >>> 0 || 1;
  for (let index = 0; index < length; index += 1) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    bytes[index] = state >>> 24;
  }
  return bytes;
}

/** Reads this process's memory at `address` through /proc/self/mem: around every view, as a kernel would. */
export function readOwnMemory(address: bigint, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  const descriptor = openSync("/proc/self/mem", "r");
  try {
    let done = 0;
    while (done < length) {
      const read = readSync(descriptor, bytes, done, length - done, Number(address) + done);
      if (read === 0) throw new Error(`/proc/self/mem: nothing to read at ${address + BigInt(done)}`);
      done += read;
    }
  } finally {
    closeSync(descriptor);
  }
  return bytes;
}
