// Which prebuilt addon package fits this machine. The addon is shipped as one package per platform
// (`@nuvec/metal-native-<key>`, with `os`/`cpu`/`libc` fields), listed as optional dependencies of
// @nuvec/metal-native, so the package manager installs only the one that fits; this picks it at run time.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The file name of the addon, in a source build (`native/build/Release/`) and in a platform package. */
export const ADDON_FILE_NAME = "nuvec_metal_native.node";

/**
 * The file of a Linux platform package built for the Node.js releases of one `NODE_MODULE_VERSION`
 * (`process.versions.modules`): its views are V8 backing stores there. `ADDON_FILE_NAME`, the Node-API build,
 * serves every other release.
 */
export function abiAddonFileName(modules: string = process.versions.modules): string {
  return ADDON_FILE_NAME.replace(/\.node$/, `-abi${modules}.node`);
}

/** The platforms with a prebuilt addon package, by platform key (see {@link platformKey}). */
export const PREBUILT_PACKAGES: Readonly<Record<string, string>> = {
  "linux-x64-gnu": "@nuvec/metal-native-linux-x64-gnu",
  "linux-arm64-gnu": "@nuvec/metal-native-linux-arm64-gnu",
  "darwin-arm64": "@nuvec/metal-native-darwin-arm64",
};

/** The C library of a Linux process: glibc or musl (Alpine). */
export type LinuxLibc = "glibc" | "musl";

interface ReportHeader {
  header?: { glibcVersionRuntime?: string };
}

/**
 * The C library this Node.js runs on. Node's diagnostic report names the glibc version it runs with; a Node
 * built for musl has none. (The same test as napi-rs and detect-libc use.)
 */
export function detectLinuxLibc(): LinuxLibc {
  const report = process.report?.getReport() as ReportHeader | undefined;
  return typeof report?.header?.glibcVersionRuntime === "string" ? "glibc" : "musl";
}

/**
 * The platform key of a prebuilt addon: `linux-<arch>-gnu` or `linux-<arch>-musl` on Linux (a glibc binary
 * does not load under musl, nor the reverse), `<platform>-<arch>` elsewhere.
 */
export function platformKey(
  platform: string = process.platform,
  arch: string = process.arch,
  libc: () => LinuxLibc = detectLinuxLibc,
): string {
  if (platform === "linux") return `linux-${arch}-${libc() === "musl" ? "musl" : "gnu"}`;
  return `${platform}-${arch}`;
}

/**
 * The package's root (where native/ and scripts/ are): one level above src/ and dist/ alike, which is why
 * this lives in a file directly under src/ (the bundles in dist/ are one level deep too).
 */
export function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..");
}
