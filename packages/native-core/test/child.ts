// Child processes for the backends' hostile and damaged-addon tests: a crash (SIGBUS, SIGSEGV, SIGABRT) is
// seen as the child's signal, never as the test runner's death. Said once here for every backend package.
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { expect } from "vitest";

/** How a child ended, and its last stdout line parsed as JSON (the raw line if it is none). */
export interface ChildOutcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  report: unknown;
}

/**
 * Runs `source` as an ES module in a fresh Node.js. `timeout` (default 120 s) is no bound on speed: it turns
 * a hang into a failure instead of a stuck suite.
 */
export function runInChild(
  source: string,
  options: { nodeOptions?: string[]; env?: NodeJS.ProcessEnv; timeout?: number } = {},
): ChildOutcome {
  const result = spawnSync(
    process.execPath,
    [...(options.nodeOptions ?? []), "--input-type=module", "-e", source],
    { encoding: "utf8", env: options.env ?? process.env, timeout: options.timeout ?? 120_000 },
  );
  const last = result.stdout.trim().split("\n").at(-1) ?? "";
  let report: unknown;
  try {
    report = JSON.parse(last);
  } catch {
    report = last;
  }
  return { status: result.status, signal: result.signal, stderr: result.stderr, report };
}

/** Expects the child to have exited normally (no signal, status 0) and returns its report. */
export function reportOf(outcome: ChildOutcome): unknown {
  expect(outcome.signal, outcome.stderr).toBeNull();
  expect(outcome.status, outcome.stderr).toBe(0);
  return outcome.report;
}

/** [label, how to put it at a path]: an addon's damages, for `addon` the bytes of a whole 64-bit ELF addon. */
export function addonDamages(addon: Buffer): [string, (file: string) => void][] {
  const cut = (length: number) => (file: string) => writeFileSync(file, addon.subarray(0, length));
  // The end of the first PT_LOAD segment, from the first program header.
  const firstSegmentEnd =
    addon.length > 120 ? Number(addon.readBigUInt64LE(72) + addon.readBigUInt64LE(96)) : 0;
  return [
    ["cut inside the ELF header (40 bytes)", cut(40)],
    ["cut inside the program headers (100 bytes)", cut(100)],
    ["cut inside the first segment", cut(Math.floor(firstSegmentEnd / 2))],
    ["cut inside a later segment (three quarters)", cut(Math.floor((addon.length * 3) / 4))],
    ["one byte short", cut(addon.length - 1)],
    ["not ELF at all", (file) => writeFileSync(file, "module.exports = {};\n")],
    ["empty", (file) => writeFileSync(file, "")],
    ["a directory", (file) => mkdirSync(file)],
    ["a FIFO", (file) => expect(spawnSync("mkfifo", [file]).status).toBe(0)],
    ["a link to /dev/zero", (file) => symlinkSync("/dev/zero", file)],
  ];
}

/** The C++ compiler node-gyp's make would pick: $CXX, else the first of c++, g++, clang++ that answers. */
export const cxx: string | undefined = [process.env.CXX, "c++", "g++", "clang++"]
  .filter((name): name is string => !!name)
  .find((name) => spawnSync(name, ["--version"], { encoding: "utf8" }).status === 0);

/**
 * Compiles a C++ unit test (C++17, every warning an error) from `sources` into `binary` and runs it: both
 * silent on stderr and exiting 0, the run printing `ok <part>` for each of `parts` and its count of checks.
 */
export function compileAndRun(
  binary: string,
  sources: string[],
  options: { includes?: string[]; env?: NodeJS.ProcessEnv; parts: string[] },
): void {
  const includes = (options.includes ?? []).flatMap((folder) => ["-I", folder]);
  const flags = ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror"];
  const build = spawnSync(cxx ?? "c++", [...flags, ...includes, "-o", binary, ...sources], {
    encoding: "utf8",
  });
  expect(build.stderr).toBe("");
  expect(build.status).toBe(0);
  const run = spawnSync(binary, [], { encoding: "utf8", env: options.env ?? process.env });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  for (const part of options.parts) expect(run.stdout).toContain(`ok ${part}`);
  expect(run.stdout).toMatch(/all \d+ checks passed/);
}
