// The one build definition of the workspace's packages: each package's tsup.config.ts names its entries and
// what differs (platform, shims, splitting) and takes the rest from here.
import { defineConfig, type Options } from "tsup";

/**
 * The build of a published `@nuvec/*` package: ESM and CommonJS, declarations with every `@internal` member
 * and export left out (`stripInternal`: what ships is what the README documents, scripts/surface.test.mjs
 * checks it), ES2022, browser-safe (`neutral`) unless the package says `platform: "node"`.
 */
export function packageBuild(options: Options & { entry: string[] }): ReturnType<typeof defineConfig> {
  return defineConfig({
    format: ["esm", "cjs"],
    dts: { compilerOptions: { stripInternal: true } },
    // No source maps in what ships: the output is unminified ES2022 that reads like the source, and a map
    // would triple the JavaScript in the tarball (scripts/DECISIONS.md).
    sourcemap: false,
    clean: true,
    target: "es2022",
    platform: "neutral",
    ...options,
  });
}
