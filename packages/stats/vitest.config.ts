import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    // Failing fast-check properties print their seed; NUVEC_FC_SEED / NUVEC_FC_PATH replay them.
    setupFiles: ["../../scripts/fast-check-seed.ts"],
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results/results.json" },
  },
});
