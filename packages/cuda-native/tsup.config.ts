import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  dts: true,
  // No source maps in what ships, as in every published package (docs/DESIGN-NOTES.md, "Package metadata").
  sourcemap: false,
  clean: true,
  // import.meta.url (to find the package root and the addon) also works in the CommonJS build.
  shims: true,
  target: "es2022",
  platform: "node",
});
