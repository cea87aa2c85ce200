// What is published: the two entries of the package share one copy of the error classes, in ESM and in
// CommonJS alike, so that `instanceof NativeError` holds whichever entry an error came from; and the shared
// native core travels inside the package.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);

describe("packaging", () => {
  it("CommonJS: the main entry and ./mock share the error classes", () => {
    const main = require("../dist/index.cjs");
    const mock = require("../dist/mock.cjs");
    expect(mock.NativeError).toBe(main.NativeError);
    expect(mock.NativeArgumentError).toBe(main.NativeArgumentError);
    let caught: unknown;
    try {
      new mock.MockBackend().newBuffer(-1);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(main.NativeError);
  });

  it("ESM: the main entry and ./mock share the error classes", async () => {
    const main = await import("../dist/index.js");
    const mock = await import("../dist/mock.js");
    expect(mock.NativeError).toBe(main.NativeError);
  });
});

// The shared native core is a private workspace package: what `npx @nuvec/metal-native build` and the
// prebuilds compile must be inside the published package (its native/native-core/ copy), and every source
// binding.gyp names must be there.
describe("the published package builds without @nuvec/native-core", () => {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const packed = (): string[] => {
    const result = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(result.status, result.stderr).toBe(0);
    const [manifest] = JSON.parse(result.stdout) as [{ files: { path: string }[] }];
    return manifest.files.map((file) => file.path);
  };

  it("ships the core's sources, its list of them and the build scripts, not its C++ unit tests", async () => {
    const files = packed();
    for (const file of [
      "native/binding.gyp",
      "native/native-core/native_core.gypi",
      "native/native-core/build-from-source.mjs",
      "native/native-core/build-settings.mjs",
      "native/native-core/core/platform.h",
      "scripts/build-from-source.mjs",
    ])
      expect(files).toContain(file);
    expect(files.filter((file) => /_test\.cc$|check_test\.h$|native\/build\//.test(file))).toEqual([]);
    // Every source and include directory binding.gyp gives the compiler (Linux and macOS) is shipped.
    const settingsModule = join(root, "native", "native-core", "build-settings.mjs");
    const { buildSettings } = (await import(pathToFileURL(settingsModule).href)) as {
      buildSettings(nativeDir: string, os: string): { sources: string[]; includeDirs: string[] };
    };
    for (const os of ["linux", "mac"]) {
      const { sources } = buildSettings(join(root, "native"), os);
      expect(sources.length).toBeGreaterThan(8);
      for (const source of sources) expect(files).toContain(relative(root, source).split(sep).join("/"));
    }
  });

  it("the package's manifest does not depend on @nuvec/native-core at run time", () => {
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"])
      expect(Object.keys(manifest[field] ?? {})).not.toContain("@nuvec/native-core");
    const shipped = readdirSync(join(root, "dist")).filter((name) => /\.(c?js|d\.c?ts)$/.test(name));
    expect(shipped).toContain("index.d.ts");
    for (const name of shipped)
      expect(readFileSync(join(root, "dist", name), "utf8"), name).not.toMatch(/["']@nuvec\/native-core/);
  });
});
