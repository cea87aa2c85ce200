import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // The contract suite (../metal-native/test/contract.ts) checks errors against @nuvec/metal-native's
    // sources: the backend must throw those same classes, so both resolve to the sources.
    alias: {
      "@nuvec/metal-native": fileURLToPath(new URL("../metal-native/src/index.ts", import.meta.url)),
    },
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results/results.json" },
  },
});
