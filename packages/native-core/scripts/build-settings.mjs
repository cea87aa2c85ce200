#!/usr/bin/env node
// A backend's build settings as its native/binding.gyp gives them to node-gyp, for the builds that do not
// run node-gyp: metal-native's scripts/prebuild.mjs (Zig) and cuda-native's gpu/run.sh (g++ on a machine
// without node-gyp). Reads the target of binding.gyp, the files it includes (native-core/native_core.gypi,
// whose paths are relative to itself, as gyp reads them) and the conditions that hold for one OS.
// Imports nothing but Node's built-ins: it is copied into each backend (scripts/copy.mjs) and runs there.
//
//   node build-settings.mjs NATIVE_DIR [OS]   prints the compiler arguments, one a line: -D and -I flags,
//                                              the C++ flags, then the sources (absolute paths)
import { readFileSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** A gyp file as a value: gyp files are Python literals; ours are JSON with `#` comment lines. */
function readGyp(file) {
  const text = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("#"))
    .join("\n");
  return JSON.parse(text);
}

function holds(condition, os) {
  return condition.split(" and ").every((term) => {
    const match = /^OS(==|!=)'(\w+)'$/.exec(term.trim());
    if (!match) throw new Error(`binding.gyp: cannot read the condition ${condition}`);
    return match[1] === "==" ? os === match[2] : os !== match[2];
  });
}

/**
 * The settings of the first target of `<nativeDir>/binding.gyp` on `os` ("linux", "mac"): `sources` and
 * `includeDirs` as absolute paths, `defines`, `cflags` (C++), `libraries`. Include directories that gyp
 * computes with a command (`<!(...)`, node-addon-api's) are left to the caller.
 */
export function buildSettings(nativeDir, os = "linux") {
  const settings = { sources: [], includeDirs: [], defines: [], cflags: [], libraries: [] };
  const add = (dict, base) => {
    for (const include of dict.includes ?? []) {
      const file = join(base, include);
      add(readGyp(file), dirname(file));
    }
    const paths = (list) =>
      (list ?? []).filter((path) => !path.startsWith("<")).map((path) => resolve(base, path));
    settings.sources.push(...paths(dict.sources));
    settings.includeDirs.push(...paths(dict.include_dirs));
    settings.defines.push(...(dict.defines ?? []));
    settings.cflags.push(...(dict.cflags_cc ?? []));
    settings.libraries.push(...(dict.libraries ?? []), ...(dict.link_settings?.libraries ?? []));
    for (const [condition, extra] of dict.conditions ?? []) if (holds(condition, os)) add(extra, base);
  };
  const [target] = readGyp(join(nativeDir, "binding.gyp")).targets;
  add(target, nativeDir);
  return settings;
}

/** The compiler's arguments for those settings: defines, include directories, C++ flags, sources, libraries. */
export function compilerArguments(settings) {
  return [
    ...settings.defines.map((define) => `-D${define}`),
    ...settings.includeDirs.map((directory) => `-I${directory}`),
    ...settings.cflags,
    ...settings.sources,
    ...settings.libraries,
  ];
}

function isMain() {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isMain()) {
  const [nativeDir, os = "linux"] = process.argv.slice(2);
  if (nativeDir === undefined) {
    console.error("usage: build-settings.mjs NATIVE_DIR [OS]");
    process.exit(2);
  }
  for (const argument of compilerArguments(buildSettings(resolve(nativeDir), os))) console.log(argument);
}
