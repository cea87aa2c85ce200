// Loading @nuvec/metal-native's addon. In order: a local source build (native/build/Release: the
// workspace's, or what `npx @nuvec/metal-native build` made), then the prebuilt package of this platform (an
// optional dependency, see platforms.ts). Nothing is decided from file times (package managers do not
// preserve them).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { NativeUnavailableError, type NativeUnavailableReason } from "@nuvec/stats";
import { ADDON_FILE_NAME, PREBUILT_PACKAGES, packageRoot, platformKey } from "../platforms.js";
import { NativeAddonBackend } from "./native-backend.js";
import type { RawMetalAddon } from "./raw-metal.js";

/** The command that builds the addon from source into this very copy of the package. */
function buildCommand(): string {
  return `npx @nuvec/metal-native build (or: node "${join(packageRoot(), "scripts", "build-from-source.mjs")}")`;
}

function unavailable(reason: NativeUnavailableReason, what: string, cause?: unknown): NativeUnavailableError {
  const where = `${process.platform}-${process.arch}, Node.js ${process.version}`;
  const remedy =
    reason === "unsupported-platform" || reason === "backend-unavailable"
      ? ""
      : ` To build it from source, run ${buildCommand()}: it needs Python 3, make and a C++17 compiler ` +
        "(build-essential on Debian/Ubuntu, build-base on Alpine, the Xcode command line tools on macOS) and " +
        "finds node-gyp itself.";
  return new NativeUnavailableError(
    `@nuvec/metal-native: no native backend on ${where}: ${what}.${remedy} ` +
      "For tests, and on any platform, the mock works without native code: " +
      'import { MockBackend } from "@nuvec/metal-native/mock".',
    cause === undefined ? { reason } : { reason, cause },
  );
}

/** This package's version: its platform packages are pinned to it. */
function ownVersion(): string {
  try {
    return JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")).version;
  } catch {
    return "<the version of @nuvec/metal-native>";
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "unknown error";
}

/** Loads an addon file: its module, or the reason it is unusable. */
function loadAddonFile(
  file: string,
): { addon: RawMetalAddon } | { reason: NativeUnavailableReason; what: string; cause?: unknown } {
  try {
    const addon = createRequire(import.meta.url)(file) as RawMetalAddon;
    if (typeof addon?.available !== "boolean")
      return { reason: "load-failed", what: `${file} is not the @nuvec/metal-native addon` };
    if (addon.available) return { addon };
    return { reason: "backend-unavailable", what: addon.unavailableReason };
  } catch (error) {
    return { reason: "load-failed", what: `${file} does not load (${firstLine(error)})`, cause: error };
  }
}

function findAddon(): { addon: RawMetalAddon } | { error: NativeUnavailableError } {
  if (process.platform === "win32")
    return { error: unavailable("unsupported-platform", "there is no native backend for Windows") };
  const local = join(packageRoot(), "native", "build", "Release", ADDON_FILE_NAME);
  let localFailure: string | undefined;
  if (existsSync(local)) {
    const result = loadAddonFile(local);
    if ("addon" in result || result.reason === "backend-unavailable")
      return "addon" in result ? result : { error: unavailable(result.reason, result.what) };
    localFailure = result.what;
  }
  const key = platformKey();
  const packageName = PREBUILT_PACKAGES[key];
  const also = localFailure === undefined ? "" : `; the source build ${localFailure}`;
  if (packageName === undefined) {
    const known = Object.keys(PREBUILT_PACKAGES).join(", ");
    return {
      error: unavailable(
        "no-prebuilt",
        `there is no prebuilt addon for ${key} (there is for ${known})${also}`,
      ),
    };
  }
  let file: string;
  try {
    file = createRequire(join(packageRoot(), "package.json")).resolve(`${packageName}/${ADDON_FILE_NAME}`);
  } catch {
    return {
      error: unavailable(
        "not-installed",
        `${packageName}, the prebuilt addon for ${key}, is not installed (it is an optional dependency: ` +
          `installed with optional dependencies left out, or on another platform? Install it with ` +
          `npm install ${packageName}@${ownVersion()})${also}`,
      ),
    };
  }
  const result = loadAddonFile(file);
  if ("addon" in result) return result;
  return { error: unavailable(result.reason, `${result.what}${also}`, result.cause) };
}

let loaded: { addon: RawMetalAddon } | { error: NativeUnavailableError } | undefined;

function loadAddon(): RawMetalAddon {
  if (loaded === undefined) loaded = findAddon();
  if ("error" in loaded) throw loaded.error;
  return loaded.addon;
}

const backendsByFile = new Map<string, NativeAddonBackend>();

/**
 * @internal The backend of one given addon file, skipping the search: for running the contract suite against
 * a prebuilt binary before it is packed (scripts/run-contract.mjs). Throws {@link NativeUnavailableError}.
 */
export function openNativeBackendFile(file: string): NativeAddonBackend {
  let found = backendsByFile.get(file);
  if (found === undefined) {
    const result = loadAddonFile(file);
    if (!("addon" in result)) throw unavailable(result.reason, result.what, result.cause);
    found = new NativeAddonBackend(result.addon);
    backendsByFile.set(file, found);
  }
  return found;
}

let backend: NativeAddonBackend | undefined;

/**
 * The real native backend of this machine — Metal on macOS, host memory (`mmap`, `mlock`) on Linux and other
 * POSIX systems — loaded from a local source build (`native/build/Release/`) if there is one, else from the
 * prebuilt package of this platform (`@nuvec/metal-native-linux-x64-gnu`, …). The same object on every call
 * within a thread; each worker thread gets its own. Throws a {@link NativeUnavailableError} (with a `reason`)
 * saying what is missing and how to build from source when no addon loads.
 */
export function loadNativeBackend(): NativeAddonBackend {
  if (backend === undefined) backend = new NativeAddonBackend(loadAddon());
  return backend;
}
