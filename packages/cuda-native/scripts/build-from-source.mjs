#!/usr/bin/env node
// Builds the CUDA addon from source (native/binding.gyp) with node-gyp into native/build/Release/ of this copy
// of the package, where loadCudaBackend() looks. @nuvec/cuda-native ships no prebuilt addon
// (docs/DESIGN-NOTES.md, "CUDA backend"), so this is how every user gets one: `npx @nuvec/cuda-native build`
// (the package's bin); the workspace's `build` script runs it too (incremental). It needs a C++17 compiler,
// not the CUDA toolkit: the driver API is loaded at run time.
//
// The node-gyp logic (finding node-gyp at this time, Node's own headers, incremental builds) is
// @nuvec/metal-native's, a dependency of this package: its scripts/build-from-source.mjs, reached through its
// package.json because its exports name no scripts.
//
// Usage: build-from-source.mjs [build] [--quiet] [--if-supported]
//   --if-supported  off Linux (no CUDA backend) say so and exit 0 instead of failing.
// NUVEC_SKIP_NATIVE_BUILD=1 skips the build.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const metalNative = dirname(
  createRequire(join(root, "package.json")).resolve("@nuvec/metal-native/package.json"),
);
const { buildFromSource } = await import(
  pathToFileURL(join(metalNative, "scripts", "build-from-source.mjs")).href
);

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
