// Copies what a backend's build needs from this package into the backend's native/native-core/: the sources
// of native/core/ and native/napi/ (not the C++ unit tests), native/native_core.gypi (the one list of
// sources), and the build scripts (build-from-source.mjs, build-settings.mjs). A backend's
// scripts/build-from-source.mjs calls it first in the workspace; the folder is git-ignored and published
// with the backend, so `npx @nuvec/<backend> build` and the prebuilds compile the same files without this
// package, which is never published. Only files whose bytes differ are written, so make's incremental
// build recompiles only what changed here; files no longer here are removed there.
// Imports nothing but Node's built-ins: the backend's build script runs before anything is built.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const packageRoot = join(here, "..");

/** The folder of this package's native sources (core/, napi/, native_core.gypi). */
export const nativeCoreSources = join(packageRoot, "native");

/** Whether a file of native/ goes into a backend: everything but the C++ unit tests and their helper. */
function shipped(name) {
  return !name.endsWith("_test.cc") && name !== "check_test.h";
}

/** The files copied, as [source, path under the destination]. */
function filesToCopy() {
  const files = [[join(nativeCoreSources, "native_core.gypi"), "native_core.gypi"]];
  for (const layer of ["core", "napi"])
    for (const name of readdirSync(join(nativeCoreSources, layer)).sort())
      if (/\.(h|cc)$/.test(name) && shipped(name))
        files.push([join(nativeCoreSources, layer, name), join(layer, name)]);
  for (const name of ["build-from-source.mjs", "build-settings.mjs"]) files.push([join(here, name), name]);
  return files;
}

const NOTE =
  "# A copy, made by the build\n\n" +
  "This folder is copied from the workspace package `@nuvec/native-core` (packages/native-core) by\n" +
  "`scripts/build-from-source.mjs` and is not tracked by git: edit the files there, not here.\n";

/** Writes `bytes` to `file` unless it already holds exactly those bytes. Returns whether it wrote. */
function writeIfChanged(file, bytes) {
  if (existsSync(file) && readFileSync(file).equals(bytes)) return false;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  return true;
}

/** Every file under `folder`, as paths relative to it. */
function filesUnder(folder, base = folder) {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesUnder(join(folder, entry.name), base)
      : [relative(base, join(folder, entry.name))],
  );
}

/**
 * Copies the shared native core into `<backendRoot>/native/native-core/`; returns the paths it wrote or
 * removed (relative to that folder), empty when it was up to date.
 */
export function copyNativeCore(backendRoot) {
  const destination = join(backendRoot, "native", "native-core");
  const changed = [];
  const wanted = new Set(["README.md"]);
  if (writeIfChanged(join(destination, "README.md"), Buffer.from(NOTE))) changed.push("README.md");
  for (const [source, path] of filesToCopy()) {
    wanted.add(path);
    if (writeIfChanged(join(destination, path), readFileSync(source))) changed.push(path);
  }
  for (const path of filesUnder(destination))
    if (!wanted.has(path)) {
      rmSync(join(destination, path));
      changed.push(path);
    }
  return changed;
}
