// The stream failure contract (@nuvec/native-core/contract) on the host addon: a kernel of the host test
// library (test/native/stream_kernels.c, built here) that returns non-zero.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeStreamFailureContract } from "@nuvec/native-core/contract";
import { loadNativeBackend } from "../src/index.js";

const linux = process.platform === "linux";

/** The kernels' library, built once for the file. */
function buildKernels(): string {
  const output = join(mkdtempSync(join(tmpdir(), "nuvec-host-failures-")), "stream_kernels.so");
  const source = join(fileURLToPath(new URL(".", import.meta.url)), "native", "stream_kernels.c");
  const build = spawnSync(process.env.CC ?? "cc", ["-shared", "-fPIC", "-O2", "-o", output, source], {
    encoding: "utf8",
  });
  if (build.status !== 0) throw new Error(`the C compiler failed: ${build.stderr}`);
  return output;
}

if (linux) {
  describeStreamFailureContract("host addon (worker threads)", () => loadNativeBackend(), {
    kernels: { host: buildKernels() },
    failing: { name: "fail", parameters: ["i32"], args: [{ kind: "i32", value: 9 }] },
  });
}
