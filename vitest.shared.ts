// The one test definition of the workspace's packages: each package's vitest.config.ts takes it and adds
// what differs (node flags, aliases).
import { fileURLToPath } from "node:url";
import { defineConfig, type ViteUserConfig } from "vitest/config";

type TestOptions = NonNullable<ViteUserConfig["test"]>;

/** The tests of a workspace package, with `test` options added to (not replacing) the shared ones. */
export function packageTests(
  options: { test?: TestOptions; resolve?: ViteUserConfig["resolve"] } = {},
): ViteUserConfig {
  return defineConfig({
    ...(options.resolve === undefined ? {} : { resolve: options.resolve }),
    test: {
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      testTimeout: 120_000,
      // Hooks pack, install and remove whole projects (a scratch folder's node_modules takes seconds to
      // remove on a slow disk): they get a test's time, not vitest's 10 s.
      hookTimeout: 120_000,
      // Failing fast-check properties print their seed; NUVEC_FC_SEED / NUVEC_FC_PATH replay them.
      setupFiles: [fileURLToPath(new URL("./scripts/fast-check-seed.ts", import.meta.url))],
      reporters: ["default", "json"],
      outputFile: { json: ".vitest-results/results.json" },
      ...options.test,
    },
  });
}
