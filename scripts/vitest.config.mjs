// The tests of the workspace's own scripts (package checks, docs test, release), run by `npm test`.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ["*.test.mjs"],
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-results/results.json" },
  },
});
