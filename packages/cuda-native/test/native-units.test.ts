// The C++ unit tests of native/cuda that need no GPU: ptx_parameters.cc (the parameter types of PTX entries,
// which refuse a kernel declaration of the right size but the wrong type, an f32 declared u32), nvrtc.cc's
// loader where the file NUVEC_NVRTC_LIBRARY names does not load, and cuda_spaces.cc's address spaces over a
// fake driver (a refusal at any step leaves nothing behind). Compiled with the C++ compiler node-gyp uses
// ($CXX, else c++ or g++ from PATH).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, it } from "vitest";
import { compileAndRun } from "../../native-core/test/child.js";

const cuda = fileURLToPath(new URL("../native/cuda/", import.meta.url));
const core = fileURLToPath(new URL("../../native-core/native/", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "nuvec-ptx-parameters-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("native/cuda unit tests without a GPU", () => {
  it("reads each entry's parameter classes, skips qualifiers, and gives none for text that is not PTX", () => {
    compileAndRun(
      join(scratch, "ptx_parameters_test"),
      [join(cuda, "ptx_parameters_test.cc"), join(cuda, "ptx_parameters.cc")],
      { includes: [core, cuda], parts: ["ptx parameters"] },
    );
  });

  it("address spaces over a fake driver: a refusal at any step leaves nothing behind; a release gives every mapping back", () => {
    compileAndRun(
      join(scratch, "cuda_spaces_test"),
      [
        join(cuda, "cuda_spaces_test.cc"),
        join(cuda, "cuda_spaces.cc"),
        join(cuda, "cuda_driver.cc"),
        join(core, "core", "posix.cc"),
      ],
      { includes: [core, cuda], parts: ["granularity", "reserving", "ranges", "mapping", "unmapping"] },
    );
  });

  it("NVRTC's loader: a NUVEC_NVRTC_LIBRARY that is missing, or no library, is refused naming it and why", () => {
    const missing = join(scratch, "no-such-libnvrtc.so");
    const notLibrary = join(scratch, "not-a-library.so");
    writeFileSync(notLibrary, "not an ELF file\n");
    for (const [file, why] of [
      [missing, "No such file or directory"],
      [notLibrary, "file too short"],
    ] as const) {
      compileAndRun(
        join(scratch, "nvrtc_test"),
        [join(cuda, "nvrtc_test.cc"), join(cuda, "nvrtc.cc"), join(core, "core", "posix.cc")],
        {
          includes: [core, cuda],
          parts: ["nvrtc not loadable"],
          env: { ...process.env, NUVEC_NVRTC_LIBRARY: file, NVRTC_TEST_EXPECTED: why },
        },
      );
    }
  });
});
