// The host layer's C++ unit test (test/native/host_platform_test.cc): with std::bad_alloc injected at each
// allocation of buffer creation, file mapping and wiring in turn, nothing acquired is left behind (the
// process's accounts, the C heap, the mappings, VmLck). Compiled here with the C++ compiler node-gyp uses.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const core = join(packageRoot, "..", "native-core", "native");
const compiler = [process.env.CXX, "c++", "g++", "clang++"]
  .filter((name): name is string => !!name)
  .find((name) => spawnSync(name, ["--version"], { encoding: "utf8" }).status === 0);

describe.runIf(process.platform === "linux" && compiler !== undefined)(
  "the host layer owns every acquisition from the moment it exists (allocation failures injected)",
  () => {
    const scratch = mkdtempSync(join(tmpdir(), "nuvec-host-native-"));
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    it("host_platform_test.cc compiles without warnings and every check passes", () => {
      const binary = join(scratch, "host_platform_test");
      const build = spawnSync(
        compiler as string,
        [
          "-std=c++17",
          "-Wall",
          "-Wextra",
          "-Wno-unused-parameter",
          "-Werror",
          "-I",
          core,
          "-I",
          join(packageRoot, "native", "host"),
          "-o",
          binary,
          join(packageRoot, "test", "native", "host_platform_test.cc"),
          join(packageRoot, "native", "host", "host_system.cc"),
          join(core, "core", "posix.cc"),
          join(core, "core", "wiring_residency_set.cc"),
        ],
        { encoding: "utf8" },
      );
      expect(build.stderr).toBe("");
      expect(build.status).toBe(0);
      // glibc's per-thread cache holds freed blocks as in use: without it the heap's figure is exact.
      const run = spawnSync(binary, [], {
        encoding: "utf8",
        env: { ...process.env, GLIBC_TUNABLES: "glibc.malloc.tcache_count=0" },
      });
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      for (const part of ["buffers", "mapped files", "wiring"]) expect(run.stdout).toContain(`ok ${part}`);
      expect(run.stdout).toMatch(/all \d+ checks passed/);
    }, 120_000);
  },
);
