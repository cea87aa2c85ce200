// What the bad input catalogue's cases share: the files they map (a good one, an empty one, a folder, an
// unreadable one, a missing path), the shape of a case, and the errors they expect. Apart from the cases
// (bad-input-cases.ts, bad-input-look-alikes.ts) and the runner (bad-input.test.ts) that both use them.
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { scratchFolder } from "../../../stats/test/scratch.js";
import type { Device, DeviceOptions } from "../../src/index.js";

/** 1 MiB in bytes. */
export const MIB = 1024 ** 2;
/** The catalogue's scratch folder, removed after the run. */
export const scratch = scratchFolder("nuvec-reliability-bad-input-");
/** The files the cases map: a good one, an empty one, a folder, an unreadable one, a missing path. */
export const paths = {
  file: scratch.write("good.bin", new Uint8Array(3 * 4096 + 5).fill(9)),
  empty: scratch.write("empty.bin", ""),
  directory: join(scratch.folder, "directory"),
  unreadable: scratch.write("unreadable.bin", "secret"),
  missing: join(scratch.folder, "missing.bin"),
};
mkdirSync(paths.directory);
chmodSync(paths.unreadable, 0o000);
/** As root, chmod 000 does not stop reading: the unreadable-file case is skipped then. */
export const isRoot = process.getuid?.() === 0;

export interface Context {
  device: Device;
  other: Device;
  open: (options: DeviceOptions) => Device;
}

export interface Case {
  name: string;
  /** Sets up (must not throw) and returns the bad call, and the device to watch when not the context's. */
  act: (context: Context) => (() => unknown) | { device: Device; call: () => unknown };
  /** What the error must match: its class's name, its code, the argument it names. */
  error: Record<string, unknown>;
  skip?: string;
}

/** An ArgumentError naming `argument`, with `code`. */
export const invalid = (argument: string, code = "ERR_NUVEC_INVALID_ARGUMENT") => ({
  name: "ArgumentError",
  code,
  argument,
});
/** A StateError with `code`. */
export const state = (code: string) => ({ name: "StateError", code });
/** A case whose bad call needs no set-up. */
export const direct =
  (call: (context: Context) => unknown): Case["act"] =>
  (context) =>
  () =>
    call(context);
