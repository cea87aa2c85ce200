// The host layer's C++ unit test (test/native/host_platform_test.cc): with std::bad_alloc injected at each
// allocation of buffer creation, file mapping and wiring in turn, nothing acquired is left behind (the
// process's accounts, the C heap, the mappings, VmLck). Compiled here with the C++ compiler node-gyp uses.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, it } from "vitest";
import { compileAndRun, cxx as compiler } from "../../native-core/test/child.js";

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const core = join(packageRoot, "..", "native-core", "native");

describe.runIf(process.platform === "linux" && compiler !== undefined)(
  "the host layer owns every acquisition from the moment it exists (allocation failures injected)",
  () => {
    const scratch = mkdtempSync(join(tmpdir(), "nuvec-host-native-"));
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    it("host_platform_test.cc compiles without warnings and every check passes", () => {
      const host = join(packageRoot, "native", "host");
      const sources = [
        join(packageRoot, "test", "native", "host_platform_test.cc"),
        join(host, "host_system.cc"),
        join(host, "host_wiring.cc"),
        join(host, "host_streams.cc"),
        join(core, "core", "posix.cc"),
        join(core, "core", "wiring_residency_set.cc"),
        join(core, "core", "worker_stream.cc"),
        join(core, "core", "host_module.cc"),
      ];
      compileAndRun(join(scratch, "host_platform_test"), sources, {
        includes: [core, host],
        // glibc's per-thread cache holds freed blocks as in use: without it the heap's figure is exact.
        env: { ...process.env, GLIBC_TUNABLES: "glibc.malloc.tcache_count=0" },
        parts: ["buffers", "mapped files", "wiring"],
      });
    }, 120_000);
  },
);
