#!/usr/bin/env node
// Bundles what the GPU machine runs into plain .mjs files that need nothing but Node.js (that machine has no
// node_modules and no network): the package's tests, with `vitest` replaced by gpu/vitest-shim.mjs (node:test
// + @vitest/expect), and the bench. The workspace packages are bundled from their sources, so a test and the
// backend share one copy of the error classes. Output: gpu/dist/tests.mjs, gpu/dist/bench.mjs, gpu/dist/decode.mjs
// (the decode workload, gpu/decode/decode.mjs).
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const packages = join(here, "..", "..");
const alias = {
  vitest: join(here, "vitest-shim.mjs"),
  "@nuvec/cuda-native": join(packages, "cuda-native", "src", "index.ts"),
};
for (const name of ["stats", "allocator", "residency", "metal-native", "device"]) {
  alias[`@nuvec/${name}`] = join(packages, name, "src", "index.ts");
}
// A subpath entry of a package: its own file (esbuild would otherwise append the subpath to index.ts).
alias["@nuvec/metal-native/addon"] = join(packages, "metal-native", "src", "addon.ts");

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  alias,
  logLevel: "warning",
  // The packages say `"sideEffects": false`, which would drop the bare imports of test files (and the shim's
  // chai.use calls): what runs here is a test program, not a library.
  ignoreAnnotations: true,
  // Bundled CommonJS (chai's dependencies) may call require(): give the ES module one.
  banner: {
    js: "import { createRequire as __nuvecCreateRequire } from 'node:module'; const require = __nuvecCreateRequire(import.meta.url);",
  },
};

await build({
  ...common,
  entryPoints: [join(here, "entry-tests.ts")],
  outfile: join(here, "dist", "tests.mjs"),
});
await build({
  ...common,
  entryPoints: [join(here, "..", "bench", "cuda-bench.mjs")],
  outfile: join(here, "dist", "bench.mjs"),
});
await build({
  ...common,
  entryPoints: [join(here, "decode", "decode.mjs")],
  outfile: join(here, "dist", "decode.mjs"),
});
console.log("gpu/dist/tests.mjs, gpu/dist/bench.mjs and gpu/dist/decode.mjs bundled");
