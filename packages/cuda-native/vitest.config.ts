import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results/results.json" },
  },
});
