// Loading the CUDA addon. There is no prebuilt addon (DECISIONS.md): the one place is
// the source build in native/build/Release/ (the workspace's build, or what `npx @nuvec/cuda-native build`
// made), or the file NUVEC_CUDA_NATIVE_ADDON names (the bundled GPU runs of gpu/run.sh).
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { callNative, checkNativeBinary } from "@nuvec/metal-native/addon";
import {
  ArgumentError,
  describeValue,
  NativeUnavailableError,
  type NativeUnavailableReason,
} from "@nuvec/stats";
import { checkDeviceOrdinal } from "./arguments.js";
import { CudaBackend } from "./cuda.js";
import type { RawCudaAddon } from "./raw.js";

/** The addon's file name, in native/build/Release/ once built. */
const ADDON_FILE_NAME = "nuvec_cuda_native.node";

/** The package's root (where native/ and scripts/ are): one level above src/ and dist/ alike. */
function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..");
}

/** The command that builds the addon from source into the copy of the package at `root`. */
function buildCommand(root: string): string {
  return `npx @nuvec/cuda-native build (or: node "${join(root, "scripts", "build-from-source.mjs")}")`;
}

function unavailable(
  reason: NativeUnavailableReason,
  what: string,
  root: string,
  cause?: unknown,
  path?: string,
): NativeUnavailableError {
  const where = `${process.platform}-${process.arch}, Node.js ${process.version}`;
  const build =
    `run ${buildCommand(root)}: it needs Python 3, make and a C++17 compiler ` +
    "(build-essential on Debian/Ubuntu), not the CUDA toolkit, and finds node-gyp itself.";
  const remedy =
    reason === "unsupported-platform"
      ? " It runs on Linux with an NVIDIA driver only."
      : reason === "damaged"
        ? ` Rebuild it: ${build}`
        : ` To build it from source, ${build}`;
  const options: { reason: NativeUnavailableReason; cause?: unknown; path?: string } = { reason };
  if (cause !== undefined) options.cause = cause;
  if (path !== undefined) options.path = path;
  return new NativeUnavailableError(
    `@nuvec/cuda-native: the CUDA backend cannot load on ${where}: ${what}.${remedy}`,
    options,
  );
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "unknown error";
}

/**
 * @internal Finds and loads the addon of the package at `root` on `platform`: the file `override` names (the
 * loader passes `NUVEC_CUDA_NATIVE_ADDON`, set by the bundled GPU runs of gpu/run.sh), else
 * native/build/Release/. Returns it, or the {@link NativeUnavailableError} saying why not and how to build
 * it (`no-prebuilt`: not built; `damaged`: not a regular `.node` file at its real path, or one that is
 * truncated, empty or no shared library, refused before the dynamic loader sees it; `load-failed`: missing
 * (named by the variable) or there but does not load; `unsupported-platform`: not Linux).
 * Does not open a device: that is where no driver or no GPU shows (`backend-unavailable`).
 */
export function findCudaAddon(
  root: string,
  platform: NodeJS.Platform,
  override: string | undefined,
): { addon: RawCudaAddon } | { error: NativeUnavailableError } {
  if (platform !== "linux")
    return { error: unavailable("unsupported-platform", "CUDA's driver API is used on Linux only", root) };
  const named = override !== undefined && override !== "";
  const file = named ? override : join(root, "native", "build", "Release", ADDON_FILE_NAME);
  // The path is resolved to the one file that is loaded (its real path) and that file is checked: Node hands a
  // `.node` file to the dynamic loader, which dies of SIGBUS on a truncated one, and runs any other as
  // JavaScript (a FIFO or /dev/zero would be read forever). Nothing else is tried: no extension is added and
  // no directory is looked into, as `require` would.
  const checked = checkNativeBinary(file);
  if (checked.missing && !named)
    return {
      error: unavailable(
        "no-prebuilt",
        `the addon is not built (no ${file}; @nuvec/cuda-native ships no prebuilt addon)`,
        root,
      ),
    };
  const origin = named ? `${file} (NUVEC_CUDA_NATIVE_ADDON)` : file;
  if (checked.missing)
    return {
      error: unavailable(
        "load-failed",
        `${origin} does not load (it does not exist: the variable names the addon file itself, its .node ` +
          "extension included)",
        root,
        undefined,
        file,
      ),
    };
  if (checked.defect !== undefined)
    return {
      error: unavailable("damaged", `${origin} is damaged: ${checked.defect}`, root, undefined, file),
    };
  let addon: RawCudaAddon;
  try {
    addon = createRequire(import.meta.url)(checked.file) as RawCudaAddon;
  } catch (error) {
    return {
      error: unavailable("load-failed", `${origin} does not load (${firstLine(error)})`, root, error, file),
    };
  }
  if (typeof addon?.open !== "function" || typeof addon.facts !== "function")
    return { error: unavailable("load-failed", `${origin} is not the @nuvec/cuda-native addon`, root) };
  return { addon };
}

let loaded: { addon: RawCudaAddon } | { error: NativeUnavailableError } | undefined;

function loadAddon(): RawCudaAddon {
  if (loaded === undefined)
    loaded = findCudaAddon(packageRoot(), process.platform, process.env.NUVEC_CUDA_NATIVE_ADDON);
  if ("error" in loaded) throw loaded.error;
  return loaded.addon;
}

/** Opens device `device` through the addon; no driver, no GPU or no such device says which package failed. */
function openDevice(addon: RawCudaAddon, device: number): void {
  try {
    callNative(() => addon.open(device));
  } catch (error) {
    if (!(error instanceof NativeUnavailableError)) throw error;
    throw new NativeUnavailableError(`@nuvec/cuda-native: ${error.message}`, {
      cause: error.cause,
      reason: error.reason,
    });
  }
}

/** Options of {@link loadCudaBackend}. */
export interface CudaBackendOptions {
  /** The CUDA device ordinal (default 0). One device per thread. */
  device?: number;
}

const backends = new Map<number, CudaBackend>();

/**
 * The CUDA backend of device `device` (default 0): a `NativeBackend` over device memory, the driver API
 * loaded at run time (`dlopen("libcuda.so.1")`). The same object on every call within a thread.
 *
 * @throws ArgumentError for a bad `device` (before the driver is touched).
 * @throws NativeUnavailableError where there is no driver, no GPU or no such device (`reason`
 *   `backend-unavailable`), where the addon is not built (`no-prebuilt`: the package ships none; the message
 *   names the build command, `npx @nuvec/cuda-native build`) or does not load (`load-failed`), and off Linux
 *   (`unsupported-platform`); the message says which.
 */
export function loadCudaBackend(options: CudaBackendOptions = {}): CudaBackend {
  if (typeof options !== "object" || options === null) {
    throw new ArgumentError(
      "options",
      `options must be an object, got ${typeof options} ${describeValue(options)}`,
    );
  }
  // Every key known, each read once: a misspelt option is refused, never taken for the default device.
  for (const key of Object.keys(options)) {
    if (key !== "device") {
      throw new ArgumentError(key, `loadCudaBackend(): unknown option ${key} (the options are device)`);
    }
  }
  const given = options.device;
  // `null` is refused like any other non-ordinal: only a missing device means device 0.
  const device = given === undefined ? 0 : checkDeviceOrdinal(given);
  const existing = backends.get(device);
  if (existing !== undefined) return existing;
  const addon = loadAddon();
  openDevice(addon, device);
  const backend = new CudaBackend(
    addon,
    callNative(() => addon.facts()),
  );
  backends.set(device, backend);
  return backend;
}
