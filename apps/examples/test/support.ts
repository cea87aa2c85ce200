// What the tests of the programs share: the built programs run as a user runs them (the test task builds
// first), a scratch folder removed after the file, and the input files they are given.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { afterAll } from "vitest";

/** The examples app's folder. */
export const app = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The repository's root. */
export const root = resolve(app, "..", "..");
/** The decode trace the app ships. */
export const shippedTrace = join(app, "traces", "gpt2-decode-cut.ndjson.gz");

/** A folder of its own for a test file, removed when the file's tests are done. */
export function scratchFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/** Runs a built program (dist/NAME.js) to its end, without colour; never waits forever (a FIFO would hang). */
export function run(program: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, [join(app, "dist", `${program}.js`), ...args], {
    encoding: "utf8",
    env: { ...process.env, FORCE_COLOR: "0", ...env },
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Writes a gzipped NDJSON trace of `lines` (a header object, then events) to `path`; returns `path`. */
export function traceFile(path: string, lines: unknown[]): string {
  writeFileSync(path, gzipSync(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`));
  return path;
}

/** Writes a safetensors file of `header` and `dataBytes` zero bytes to `path`; returns the header's length. */
export function safetensorsFile(path: string, header: unknown, dataBytes: number): number {
  const body = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(body.length));
  writeFileSync(path, Buffer.concat([prefix, body, Buffer.alloc(dataBytes)]));
  return body.length;
}

/** Characters (code points) of the longest line, ANSI escapes removed, each redraw (`\r`) a line of its own. */
export function longestLine(text: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the terminal's escape sequences
  const plain = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
  return Math.max(0, ...plain.split(/\r\n|\r|\n/).map((line) => [...line].length));
}

/** Waits up to `seconds` for `condition`, polling every 20 ms. */
export async function waitFor(condition: () => boolean, seconds: number): Promise<boolean> {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}
