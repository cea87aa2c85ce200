// Loading @nuvec/metal-native's addon. In order: a local source build (native/build/Release: the
// workspace's, or what `npx @nuvec/metal-native build` made), then the prebuilt package of this platform (an
// optional dependency, see platforms.ts). Nothing is decided from file times (package managers do not
// preserve them).
import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { checkNativeBinary } from "@nuvec/native-core/addon";
import { NativeUnavailableError, type NativeUnavailableReason } from "@nuvec/stats";
import {
  ADDON_FILE_NAME,
  abiAddonFileName,
  PREBUILT_PACKAGES,
  packageRoot,
  platformKey,
} from "../platforms.js";
import { NativeAddonBackend } from "./native-backend.js";
import type { RawMetalAddon } from "./raw-metal.js";

/** The command that builds the addon from source into the copy of the package at `root`. */
function buildCommand(root: string): string {
  return `npx @nuvec/metal-native build (or: node "${join(root, "scripts", "build-from-source.mjs")}")`;
}

/** Why no addon loads: the reason, what happened, and the file concerned where there is one. */
interface Failure {
  reason: NativeUnavailableReason;
  what: string;
  cause?: unknown;
  path?: string;
  /** How to reinstall a damaged file, before the build command. */
  reinstall?: string;
}

function unavailable(failure: Failure, root: string): NativeUnavailableError {
  const { reason, what, cause, path } = failure;
  const where = `${process.platform}-${process.arch}, Node.js ${process.version}`;
  const build =
    `run ${buildCommand(root)}: it needs Python 3, make and a C++17 compiler ` +
    "(build-essential on Debian/Ubuntu, build-base on Alpine, the Xcode command line tools on macOS) and " +
    "finds node-gyp itself.";
  const remedy =
    reason === "unsupported-platform" || reason === "backend-unavailable"
      ? ""
      : failure.reinstall !== undefined
        ? ` ${failure.reinstall}; or, to build it from source, ${build}`
        : ` To build it from source, ${build}`;
  const options: { reason: NativeUnavailableReason; cause?: unknown; path?: string } = { reason };
  if (cause !== undefined) options.cause = cause;
  if (path !== undefined) options.path = path;
  return new NativeUnavailableError(
    `@nuvec/metal-native: no native backend on ${where}: ${what}.${remedy} ` +
      "For tests, and on any platform, the mock works without native code: " +
      'import { MockBackend } from "@nuvec/metal-native/mock".',
    options,
  );
}

/** The version of the package at `root`: its platform packages are pinned to it. */
function ownVersion(root: string): string {
  try {
    return JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
  } catch {
    return "<the version of @nuvec/metal-native>";
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "unknown error";
}

/**
 * Loads an addon file: its module, or the reason it is unusable. The path is resolved to its real path and
 * that one file is checked (`checkNativeBinary`) and then required, so nothing is resolved after the check:
 * a damaged file is refused before the dynamic loader maps it (it could otherwise die of SIGBUS on a
 * segment past the end of a truncated file), and a file that is no regular `.node` file is refused before
 * Node could run it as JavaScript (or read a FIFO or `/dev/zero` forever).
 */
function loadAddonFile(file: string, sha256?: string): { addon: RawMetalAddon } | Failure {
  const checked = checkNativeBinary(file, process.platform, sha256);
  if (checked.defect !== undefined)
    return { reason: "damaged", what: `${file} is damaged: ${checked.defect}`, path: file };
  try {
    const addon = createRequire(import.meta.url)(checked.file) as RawMetalAddon;
    if (typeof addon?.available !== "boolean")
      return { reason: "load-failed", what: `${file} is not the @nuvec/metal-native addon`, path: file };
    if (addon.available) return { addon };
    return { reason: "backend-unavailable", what: addon.unavailableReason };
  } catch (error) {
    return {
      reason: "load-failed",
      what: `${file} does not load (${firstLine(error)})`,
      cause: error,
      path: file,
    };
  }
}

/**
 * @internal Finds and loads the addon of the copy of @nuvec/metal-native at `root` for platform key `key`: a
 * local source build (native/build/Release) first, then the platform's prebuilt package as `root` resolves it.
 * Tells a package that is not installed (`not-installed`) from one installed with a damaged or missing addon
 * file (`damaged`, naming the file and how to reinstall it).
 */
export function findMetalAddon(
  root: string,
  key: string,
  platform: NodeJS.Platform = process.platform,
): { addon: RawMetalAddon } | { error: NativeUnavailableError } {
  if (platform === "win32")
    return {
      error: unavailable(
        { reason: "unsupported-platform", what: "there is no native backend for Windows" },
        root,
      ),
    };
  const local = join(root, "native", "build", "Release", ADDON_FILE_NAME);
  let localFailure: Failure | undefined;
  if (existsSync(local)) {
    const result = loadAddonFile(local);
    if ("addon" in result) return result;
    if (result.reason === "backend-unavailable") return { error: unavailable(result, root) };
    localFailure = result;
  }
  const packageName = PREBUILT_PACKAGES[key];
  const also = localFailure === undefined ? "" : `; the source build ${localFailure.what}`;
  // A damaged source build with nothing else to fall back on is the failure to report.
  const orLocal = (failure: Failure): Failure =>
    localFailure?.reason === "damaged"
      ? { ...failure, reason: "damaged", path: local, cause: failure.cause ?? localFailure.cause }
      : failure;
  if (packageName === undefined) {
    const known = Object.keys(PREBUILT_PACKAGES).join(", ");
    return {
      error: unavailable(
        orLocal({
          reason: "no-prebuilt",
          what: `there is no prebuilt addon for ${key} (there is for ${known})${also}`,
        }),
        root,
      ),
    };
  }
  const resolve = createRequire(join(root, "package.json")).resolve;
  const reinstall =
    `Reinstall it: npm install ${packageName}@${ownVersion(root)} (with pnpm or yarn, remove node_modules ` +
    "and install again; a copied or half-downloaded package is the usual cause)";
  // Resolving reads the package's package.json: a FIFO or a device there would block it forever.
  const installed = installedFolder(resolve, packageName);
  const notAFile = installed === undefined ? undefined : manifestNotAFile(join(installed, "package.json"));
  if (installed !== undefined && notAFile !== undefined)
    return {
      error: unavailable(
        {
          reason: "damaged",
          what: `${packageName} is installed (${installed}) but its package.json is ${notAFile}, not a file${also}`,
          path: join(installed, "package.json"),
          reinstall,
        },
        root,
      ),
    };
  let manifest: string;
  try {
    manifest = resolve(`${packageName}/package.json`);
  } catch (error) {
    // Installed but unreadable: a package.json that is not JSON, `exports` that hide it, a folder without
    // one. Only a package that is nowhere is not installed.
    const folder = installed;
    if ((error as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND" || folder !== undefined) {
      const where = folder ?? packageName;
      return {
        error: unavailable(
          {
            reason: "damaged",
            what: `${packageName} is installed (${where}) but its package.json does not lead to its addon (${firstLine(error)})${also}`,
            path: join(where, "package.json"),
            reinstall,
            cause: error,
          },
          root,
        ),
      };
    }
    return {
      error: unavailable(
        orLocal({
          reason: "not-installed",
          what:
            `${packageName}, the prebuilt addon for ${key}, is not installed (it is an optional dependency: ` +
            `installed with optional dependencies left out, or on another platform? Install it with ` +
            `npm install ${packageName}@${ownVersion(root)})${also}`,
        }),
        root,
      ),
    };
  }
  // The build for this Node.js's NODE_MODULE_VERSION where the package has one (V8 backing-store views),
  // else the Node-API build, which serves every release.
  const forThisNode = join(dirname(manifest), abiAddonFileName());
  const file = existsSync(forThisNode) ? forThisNode : join(dirname(manifest), ADDON_FILE_NAME);
  if (!existsSync(file)) {
    return {
      error: unavailable(
        {
          reason: "damaged",
          what: `${packageName} is installed but its addon ${file} is missing${also}`,
          path: file,
          reinstall,
        },
        root,
      ),
    };
  }
  // The SHA-256 the package was packed with, beside the binary (a package without one is checked by its
  // header alone).
  const packed = packedDigest(`${file}.sha256`);
  if (packed !== undefined && "defect" in packed) {
    return {
      error: unavailable(
        { reason: "damaged", what: `${file} is damaged: ${packed.defect}${also}`, path: file, reinstall },
        root,
      ),
    };
  }
  const result = loadAddonFile(file, packed?.sha256);
  if ("addon" in result) return result;
  return {
    error: unavailable(
      {
        ...result,
        what: `${result.what}${also}`,
        reinstall: result.reason === "damaged" ? reinstall : undefined,
      },
      root,
    ),
  };
}

/**
 * The SHA-256 in a platform package's `<addon>.sha256` (sha256sum's format), `undefined` when there is no
 * such file, or what is wrong with it.
 */
function packedDigest(file: string): { sha256: string } | { defect: string } | undefined {
  let text: string;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) return { defect: `its checksum ${file} is not a file` };
    if (stats.size > 4096) return { defect: `its checksum ${file} is ${stats.size} bytes, not a checksum` };
    text = readFileSync(file, "latin1").slice(0, 200);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return { defect: `its checksum ${file} cannot be read (${(error as NodeJS.ErrnoException).code})` };
  }
  const sha256 = /^([0-9a-f]{64})\b/i.exec(text)?.[1];
  return sha256 === undefined ? { defect: `its checksum ${file} holds no SHA-256` } : { sha256 };
}

/** The folder of `packageName` on the lookup paths of `resolve` (plain node_modules layouts), if any. */
function installedFolder(resolve: NodeJS.RequireResolve, packageName: string): string | undefined {
  for (const directory of resolve.paths(packageName) ?? []) {
    const folder = join(directory, packageName);
    try {
      if (statSync(folder).isDirectory()) return folder;
    } catch {}
  }
  return undefined;
}

/** What a package.json that is there but is no regular file is ("a FIFO"), else `undefined`. */
function manifestNotAFile(file: string): string | undefined {
  let stats: import("node:fs").Stats;
  try {
    stats = statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? undefined : `unreadable (${code})`;
  }
  if (stats.isFile()) return undefined;
  if (stats.isDirectory()) return "a directory";
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isSocket()) return "a socket";
  return "no regular file";
}

/** The loader's search for this very copy of the package on this machine. */
function findAddon(): { addon: RawMetalAddon } | { error: NativeUnavailableError } {
  return findMetalAddon(packageRoot(), platformKey());
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
    if (!("addon" in result)) throw unavailable(result, packageRoot());
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
