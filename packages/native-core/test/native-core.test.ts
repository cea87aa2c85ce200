// The C++ unit tests of native/core: AddonState (addon_state_test.cc), the ownership rules of the native
// layer — release, views detached by us or escaped (quarantine), handles collected before or after release,
// residency sets holding released memory, teardown, counters — checked in plain C++ against a fake platform
// that counts what was really freed; WiringResidencySet (wiring_residency_set_test.cc), the residency set
// of the host and CUDA layers; and the host's streams (stream_registry_test.cc): worker streams, host modules
// loaded with dlopen, and the pins that keep queued work's memory. Compiled here with the C++ compiler node-gyp uses ($CXX, else c++ or
// g++ from PATH); the addon builds from source in CI, so CI has one: there a missing compiler fails this
// test instead of skipping it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { compileAndRun, cxx as compiler } from "./child.js";

const core = fileURLToPath(new URL("../native/core/", import.meta.url));

const inCi = process.env.CI === "true";

describe("native/core stays free of N-API", () => {
  it("no file of native/core includes napi.h or node_api.h (AddonState is tested without Node)", () => {
    const files = readdirSync(core).filter((name) => /\.(h|cc)$/.test(name));
    expect(files).toContain("addon_state.h");
    for (const file of files) {
      expect(readFileSync(join(core, file), "utf8"), file).not.toMatch(
        /#include\s*[<"](napi|node_api)\.h[>"]/,
      );
    }
  });
});

// Each core/<name>_test.cc is compiled with core/<name>.cc, and what it prints says which rules passed.
const unitTests: Record<string, string[]> = {
  addon_state: [
    "add/release",
    "views detached by us",
    "escaped views",
    "handle collected",
    "residency sets",
    "teardown",
    "ranges",
    "view ledger",
    "view ledger allocation failures",
    "allocation failures",
  ],
  wiring_residency_set: ["wiring follows the request", "failures", "allocation failures"],
  stream_registry: [
    "host modules",
    "worker stream",
    "waits across streams and failures",
    "destruction drops queued work",
    "pins",
    "teardown with queued work",
  ],
};

// The sources a unit test needs beside core/<name>.cc.
const otherSources: Record<string, string[]> = {
  stream_registry: ["addon_state.cc", "worker_stream.cc", "host_module.cc", "posix.cc"],
};

// stream_registry_test.cc's kernels (core/host_kernels_test_library.c), as shared libraries: as written, with
// a table of version 2, and with a parameter letter that is none. Built with the C compiler beside $CXX.
function kernelLibraries(scratch: string): NodeJS.ProcessEnv {
  const cc = process.env.CC ?? "cc";
  const build = (name: string, define: string[]) => {
    const output = join(scratch, name);
    const result = spawnSync(
      cc,
      [
        "-shared",
        "-fPIC",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Werror",
        ...define,
        "-o",
        output,
        join(core, "host_kernels_test_library.c"),
      ],
      { encoding: "utf8" },
    );
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    return output;
  };
  return {
    ...process.env,
    NUVEC_TEST_KERNELS: build("kernels.so", []),
    NUVEC_TEST_KERNELS_VERSION_2: build("kernels-v2.so", ["-DNUVEC_TEST_VERSION=2"]),
    NUVEC_TEST_KERNELS_BAD: build("kernels-bad.so", ["-DNUVEC_TEST_BAD_PARAMETERS"]),
  };
}

describe("native/core's C++ unit tests (AddonState, WiringResidencySet)", () => {
  it("has a C++ compiler to build them with (required in CI)", () => {
    if (inCi) expect(compiler, "no C++ compiler (c++, g++, clang++ or $CXX) on PATH in CI").toBeDefined();
  });

  it("every *_test.cc of native/core is run here", () => {
    const found = readdirSync(core)
      .filter((name) => name.endsWith("_test.cc"))
      .map((name) => name.replace(/_test\.cc$/, ""));
    expect(found.sort()).toEqual(Object.keys(unitTests).sort());
  });

  // Outside CI a machine without a compiler cannot build the addon either: nothing native to test there.
  describe.runIf(compiler !== undefined || inCi)("compiled and run", () => {
    const scratch = mkdtempSync(join(tmpdir(), "nuvec-core-tests-"));
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    for (const [unit, rules] of Object.entries(unitTests)) {
      it(`core/${unit}_test.cc compiles without warnings and every check passes`, () => {
        const sources = [join(core, `${unit}_test.cc`), join(core, `${unit}.cc`)];
        for (const other of otherSources[unit] ?? []) sources.push(join(core, other));
        const env = unit === "stream_registry" ? kernelLibraries(scratch) : undefined;
        compileAndRun(join(scratch, `${unit}_test`), sources, { parts: rules, ...(env ? { env } : {}) });
      }, 300_000);
    }
  });
});
