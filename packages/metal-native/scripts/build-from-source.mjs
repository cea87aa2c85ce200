#!/usr/bin/env node
// Builds this package's addon from source (native/binding.gyp) with node-gyp into native/build/Release/,
// where loadNativeBackend() looks first: `npx @nuvec/metal-native build` on a platform with no prebuilt
// package (or to replace it), and the workspace's `build` (incremental).
// The shared native core and the node-gyp driver are @nuvec/native-core's, in native/native-core/: in the
// workspace this first refreshes that copy from @nuvec/native-core (a devDependency); a published package
// ships the copy and has no such dependency.
//
// Usage: build-from-source.mjs [build] [--quiet] [--if-supported]
//   --if-supported  on Windows (no native backend) say so and exit 0 instead of failing.
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
  console.error(`@nuvec/metal-native: ${driver} is missing: this copy of the package is incomplete`);
  process.exit(1);
}
const { buildFromSource } = await import(pathToFileURL(driver).href);

process.exitCode = buildFromSource({
  packageName: "@nuvec/metal-native",
  root,
  addonFile: "nuvec_metal_native.node",
  args: process.argv.slice(2),
  unsupported: (platform) =>
    platform === "win32" ? "there is no native backend for Windows; use @nuvec/metal-native/mock" : undefined,
  description:
    "  Builds the native addon from source into native/build/Release/ of the installed package, where it is\n" +
    "  loaded before any prebuilt package. Needs Python 3, make and a C++17 compiler; node-gyp is found on\n" +
    "  PATH, beside npm, or fetched with npx.",
  requirements:
    "It needs Python 3, make and a C++17 compiler (build-essential on Debian/Ubuntu, build-base and python3 " +
    "on Alpine, the Xcode command line tools on macOS). Without it, use @nuvec/metal-native/mock.",
});
