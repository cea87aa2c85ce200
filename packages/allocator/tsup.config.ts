import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/node.ts"],
  format: ["esm", "cjs"],
  dts: true,
  // No source maps in what ships: the output is unminified ES2022 that reads like the source, and a map
  // would triple the JavaScript in the tarball (docs/DESIGN-NOTES.md, "Package metadata").
  sourcemap: false,
  clean: true,
  target: "es2022",
  platform: "neutral",
});
