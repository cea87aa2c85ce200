import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/mock.ts"],
  format: ["esm", "cjs"],
  dts: true,
  // No source maps in what ships: the output is unminified ES2022 that reads like the source, and a map
  // would triple the JavaScript in the tarball (docs/DESIGN-NOTES.md, "Package metadata").
  sourcemap: false,
  clean: true,
  // import.meta.url (to find the package root and the addon) also works in the CommonJS build.
  shims: true,
  // One copy of the error classes shared by both entries in the CommonJS build too, so `instanceof
  // NativeError` holds across `@nuvec/metal-native` and `@nuvec/metal-native/mock`.
  splitting: true,
  target: "es2022",
  platform: "node",
});
