#!/usr/bin/env node
// Bundles entry.ts with the workspace's packages from their sources into decode-on-cuda.mjs, a file that
// needs nothing but Node.js (the GPU machine has no node_modules). esbuild is @nuvec/cuda-native's.
// Usage: node scripts/decode-on-cuda/bundle.mjs OUTPUT_FOLDER
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const packages = resolve(here, "..", "..", "..", "..", "packages");
const { build } = createRequire(join(packages, "cuda-native", "package.json"))("esbuild");
const output = resolve(process.argv[2] ?? join(here, "..", "..", "out"));
const alias = { "@nuvec/cuda-native": join(packages, "cuda-native", "src", "index.ts") };
for (const name of ["stats", "allocator", "residency", "metal-native", "device", "native-core"]) {
  alias[`@nuvec/${name}`] = join(packages, name, "src", "index.ts");
}
alias["@nuvec/metal-native/addon"] = join(packages, "metal-native", "src", "addon.ts");
alias["@nuvec/native-core/addon"] = join(packages, "native-core", "src", "addon.ts");
await build({
  entryPoints: [join(here, "entry.ts")],
  outfile: join(output, "decode-on-cuda.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  alias,
  logLevel: "warning",
  banner: {
    js: "import { createRequire as __require } from 'node:module'; const require = __require(import.meta.url);",
  },
});
console.log(join(output, "decode-on-cuda.mjs"));
