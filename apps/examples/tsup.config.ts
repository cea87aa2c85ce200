import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/demo.ts", "src/replay.ts", "src/checkpoint.ts", "src/kernel.ts"],
  format: ["esm"],
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
});
