// The C++ unit test of native/cuda/ptx_parameters.cc: the parameter types of PTX entries, which refuse a
// kernel declaration of the right size but the wrong type (an f32 declared u32). Compiled with the C++
// compiler node-gyp uses ($CXX, else c++ or g++ from PATH); no GPU needed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, it } from "vitest";
import { compileAndRun } from "../../native-core/test/child.js";

const cuda = fileURLToPath(new URL("../native/cuda/", import.meta.url));
const core = fileURLToPath(new URL("../../native-core/native/", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "nuvec-ptx-parameters-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("PTX parameter types (ptx_parameters_test.cc)", () => {
  it("reads each entry's parameter classes, skips qualifiers, and gives none for text that is not PTX", () => {
    compileAndRun(
      join(scratch, "ptx_parameters_test"),
      [join(cuda, "ptx_parameters_test.cc"), join(cuda, "ptx_parameters.cc")],
      { includes: [core, cuda], parts: ["ptx parameters"] },
    );
  });
});
