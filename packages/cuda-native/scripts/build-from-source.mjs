#!/usr/bin/env node
// Builds the CUDA addon from source (native/binding.gyp) with node-gyp into native/build/Release/ of this copy
// of the package, where loadCudaBackend() looks. @nuvec/cuda-native ships no prebuilt addon (DECISIONS.md),
// so this is how every user gets one: `npx @nuvec/cuda-native build` (the package's bin); the workspace's
// `build` runs it too (incremental). It needs a C++17 compiler, not the CUDA toolkit: the driver API is
// loaded at run time.
// The shared native core and the node-gyp driver are @nuvec/native-core's, in native/native-core/: in the
// workspace this first refreshes that copy from @nuvec/native-core (a devDependency); a published package
// ships the copy and has no such dependency.
//
// Usage: build-from-source.mjs [build] [--quiet] [--if-supported]
//   --if-supported  off Linux (no CUDA backend) say so and exit 0 instead of failing.
// NUVEC_SKIP_NATIVE_BUILD=1 skips the build.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
try {
  const { copyNativeCore } = await import("@nuvec/native-core/copy");
  copyNativeCore(root);
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND") throw error;
}
const driver = join(root, "native", "native-core", "build-from-source.mjs");
if (!existsSync(driver)) {
  console.error(`@nuvec/cuda-native: ${driver} is missing: this copy of the package is incomplete`);
  process.exit(1);
}
const { buildFromSource } = await import(pathToFileURL(driver).href);

process.exitCode = buildFromSource({
  packageName: "@nuvec/cuda-native",
  root,
  addonFile: "nuvec_cuda_native.node",
  args: process.argv.slice(2),
  unsupported: (platform) =>
    platform === "linux" ? undefined : `there is no CUDA backend for ${platform}: it runs on Linux only`,
  description:
    "  Builds the CUDA addon from source into native/build/Release/ of the installed package, where\n" +
    "  loadCudaBackend() loads it. Needs Python 3, make and a C++17 compiler, not the CUDA toolkit (the driver\n" +
    "  is loaded at run time); node-gyp is found on PATH, beside npm, or fetched with npx.",
  requirements:
    "It needs Python 3, make and a C++17 compiler (build-essential on Debian/Ubuntu), not the CUDA toolkit.",
});
