// The Metal layer cannot be built or run on Linux. What can be checked honestly: that it is well-formed
// Objective-C++ (ARC, blocks, C++17) against the declarations of Metal and Foundation we keep in
// native/metal/check/ — a declaration stub, not Apple's SDK. Undeclared selectors, type errors and C++ errors
// are caught; whether Metal behaves as declared is not. Runs when clang is on PATH (.ci/system-packages
// installs it from Debian), skips otherwise.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const packageRoot = fileURLToPath(new URL("..", import.meta.url));
// The shared core's headers (core/platform.h), from their one place: @nuvec/native-core's native/.
const nativeCore = join(
  dirname(createRequire(import.meta.url).resolve("@nuvec/native-core/package.json")),
  "native",
);
const clang = spawnSync("clang", ["--version"], { encoding: "utf8" });
const hasClang = clang.status === 0;
const onMac = process.platform === "darwin";

/** Node's headers: the running Node's own (as scripts/build-from-source.mjs gives node-gyp). */
function nodeIncludeDirectory(): string {
  return join(dirname(dirname(process.execPath)), "include", "node");
}

function check(file: string, extraFlags: string[] = [], options: { input?: string } = {}) {
  const require = createRequire(import.meta.url);
  const addonApi = resolve(packageRoot, (require("node-addon-api") as { include_dir: string }).include_dir);
  return spawnSync(
    "clang",
    [
      "-fsyntax-only",
      "-x",
      "objective-c++",
      "-std=c++17",
      "-fblocks",
      "-fobjc-runtime=macosx-13.0",
      "-fobjc-arc",
      "-Wall",
      "-Wextra",
      "-Wno-unused-parameter",
      "-Werror",
      `-I${nodeIncludeDirectory()}`,
      `-I${addonApi}`,
      `-I${nativeCore}`,
      `-I${join(packageRoot, "native", "metal", "check")}`,
      ...extraFlags,
      file,
    ],
    { encoding: "utf8", cwd: packageRoot, ...options },
  );
}

describe.skipIf(!hasClang || onMac)("Metal layer: clang -fsyntax-only against our declaration stub", () => {
  const sources = readdirSync(join(packageRoot, "native", "metal")).filter((name) => name.endsWith(".mm"));

  it("there is a Metal layer to check", () => {
    expect(sources).toContain("metal_platform.mm");
  });

  // The example a runtime author copies (apps/examples/kernel): a compute kernel bound to a nuvec buffer by
  // its metalBuffer, on the runtime's queue. Checked against the same declarations.
  const exampleFolder = resolve(packageRoot, "..", "..", "apps", "examples", "kernel", "metal");
  const examples = existsSync(exampleFolder)
    ? readdirSync(exampleFolder).filter((name) => name.endsWith(".mm"))
    : [];

  it("the example kernel's Metal version is there to check", () => {
    expect(examples).toContain("kernel_metal.mm");
  });

  it.each([
    ...sources.map((source) => [source, join("native", "metal", source)]),
    ...examples.map((source) => [`apps/examples/kernel/metal/${source}`, join(exampleFolder, source)]),
  ])("%s is well-formed Objective-C++ (ARC, blocks) against the declarations", (_label, file) => {
    const result = check(file);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  });

  // Fed on stdin: a source's "core/platform.h" resolves through the include path, as from its own folder.
  it.each([
    [
      "the Metal layer's",
      join(packageRoot, "native", "metal", "metal_platform.mm"),
      "addAllocation:",
      "addAlocation",
    ],
    ["the example's", join(exampleFolder, "kernel_metal.mm"), "dispatchThreads:", "dispatchThread"],
  ])("%s check is not vacuous: a misspelt selector is an error", (_label, file, selector, misspelt) => {
    const result = check("-", [], { input: readFileSync(file, "utf8").replace(selector, `${misspelt}:`) });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(new RegExp(misspelt));
  });
});
