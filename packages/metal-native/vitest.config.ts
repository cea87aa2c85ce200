import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    // The host leak test collects garbage to let quarantined memory (views collected before release) go.
    execArgv: ["--expose-gc"],
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results/results.json" },
  },
});
