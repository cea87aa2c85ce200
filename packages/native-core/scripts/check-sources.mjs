#!/usr/bin/env node
// This package's build: checks that native/native_core.gypi, the one list of the shared sources, names
// every .cc of native/core/ and native/napi/ but the C++ unit tests (*_test.cc), and nothing else, and that
// no source includes another .cc (each is its own translation unit). A source missing from the list would
// compile in no addon and fail only at link or load time.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const native = join(dirname(fileURLToPath(import.meta.url)), "..", "native");
const gypi = JSON.parse(
  readFileSync(join(native, "native_core.gypi"), "utf8")
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("#"))
    .join("\n"),
);
const listed = [...gypi.sources].sort();
const present = ["core", "napi"]
  .flatMap((layer) => readdirSync(join(native, layer)).map((name) => `${layer}/${name}`))
  .filter((path) => path.endsWith(".cc") && !path.endsWith("_test.cc"))
  .sort();
const problems = [
  ...present.filter((path) => !listed.includes(path)).map((path) => `${path} is not in native_core.gypi`),
  ...listed
    .filter((path) => !present.includes(path))
    .map((path) => `native_core.gypi lists ${path}, not there`),
];
for (const layer of ["core", "napi"])
  for (const name of readdirSync(join(native, layer)))
    if (/#include\s+"[^"]+\.cc"/.test(readFileSync(join(native, layer, name), "utf8")))
      problems.push(`${layer}/${name} includes a .cc file`);
if (problems.length > 0) {
  for (const problem of problems) console.error(`@nuvec/native-core: ${problem}`);
  process.exit(1);
}
