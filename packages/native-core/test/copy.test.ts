// scripts/copy.mjs: what a backend's build copies, and that a second copy writes nothing (make stays
// incremental) while a file that left the core leaves the copy too.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { copyNativeCore, nativeCoreSources } from "../scripts/copy.mjs";

const scratches: string[] = [];
afterEach(() => {
  for (const scratch of scratches.splice(0)) rmSync(scratch, { recursive: true, force: true });
});
function backend(): string {
  const root = mkdtempSync(join(tmpdir(), "nuvec-copy-"));
  scratches.push(root);
  return root;
}

describe("copyNativeCore", () => {
  it("copies core/, napi/ and the gypi without the unit tests, and the two build scripts", () => {
    const root = backend();
    copyNativeCore(root);
    const copy = join(root, "native", "native-core");
    const core = readdirSync(join(copy, "core")).sort();
    expect(core).toContain("platform.h");
    expect(core.filter((name) => name.endsWith("_test.cc") || name === "check_test.h")).toEqual([]);
    // Sources and headers only: the unit tests' kernel library (host_kernels_test_library.c) stays behind.
    const expectedCore = readdirSync(join(nativeCoreSources, "core"))
      .filter((name) => /\.(h|cc)$/.test(name) && !name.endsWith("_test.cc") && name !== "check_test.h")
      .sort();
    expect(core).toEqual(expectedCore);
    expect(readdirSync(join(copy, "napi")).sort()).toEqual(
      readdirSync(join(nativeCoreSources, "napi")).sort(),
    );
    expect(readFileSync(join(copy, "native_core.gypi"), "utf8")).toBe(
      readFileSync(join(nativeCoreSources, "native_core.gypi"), "utf8"),
    );
    for (const script of ["build-from-source.mjs", "build-settings.mjs", "README.md"])
      expect(existsSync(join(copy, script)), script).toBe(true);
  });

  it("writes nothing the second time, rewrites a changed file and removes one the core does not have", () => {
    const root = backend();
    expect(copyNativeCore(root).length).toBeGreaterThan(10);
    const copy = join(root, "native", "native-core");
    const platform = join(copy, "core", "platform.h");
    const before = statSync(platform).mtimeMs;
    expect(copyNativeCore(root)).toEqual([]);
    expect(statSync(platform).mtimeMs).toBe(before);

    writeFileSync(platform, "// edited in the copy\n");
    writeFileSync(join(copy, "core", "stale.cc"), "// left over\n");
    expect(copyNativeCore(root).sort()).toEqual(["core/platform.h", "core/stale.cc"]);
    expect(readFileSync(platform, "utf8")).toBe(
      readFileSync(join(nativeCoreSources, "core", "platform.h"), "utf8"),
    );
    expect(existsSync(join(copy, "core", "stale.cc"))).toBe(false);
  });
});
