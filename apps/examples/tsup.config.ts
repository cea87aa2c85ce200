import { packageBuild } from "../../tsup.shared.js";

// Programs, not a library: ESM only, no declarations, source maps for their stack traces.
export default packageBuild({
  entry: ["src/demo.ts", "src/replay.ts", "src/checkpoint.ts", "src/kernel.ts", "src/decode.ts"],
  format: ["esm"],
  dts: false,
  sourcemap: true,
  target: "node20",
  platform: "node",
});
