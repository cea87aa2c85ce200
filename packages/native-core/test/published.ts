// What a backend's published package must hold to build without @nuvec/native-core (private, never
// published): its native/native-core/ copy (every file of it), every source its binding.gyp gives the compiler,
// and the build scripts; not the core's C++ unit tests, and no dependency on this package at run time.
// Each backend's test/packaging.test.ts runs it on itself (`@nuvec/native-core/published`).
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

interface BuildSettings {
  sources: string[];
  includeDirs: string[];
}

/** The files `npm pack` would put in the package at `root`, as package-relative paths with `/`. */
function packedFiles(root: string): string[] {
  const result = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: root,
    encoding: "utf8",
  });
  expect(result.status, result.stderr).toBe(0);
  const [manifest] = JSON.parse(result.stdout) as [{ files: { path: string }[] }];
  return manifest.files.map((file) => file.path);
}

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(folder, entry.name)) : [join(folder, entry.name)],
  );
}

/**
 * Checks the built backend package at `root` (its build ran, so native/native-core/ and dist/ exist) as
 * published, for the platforms `oses` its binding.gyp builds on (gyp's names: "linux", "mac").
 */
export function describePublishedBackend(root: string, oses: string[]): void {
  describe("the published package builds without @nuvec/native-core", () => {
    const relativePath = (path: string) => relative(root, path).split(sep).join("/");

    it("ships the core's copy, every source binding.gyp names and the build scripts, not the unit tests", async () => {
      const files = packedFiles(root);
      for (const file of ["native/binding.gyp", "scripts/build-from-source.mjs"])
        expect(files).toContain(file);
      const copy = filesUnder(join(root, "native", "native-core")).map(relativePath);
      expect(copy).toContain("native/native-core/native_core.gypi");
      expect(copy).toContain("native/native-core/build-from-source.mjs");
      for (const file of copy) expect(files).toContain(file);
      expect(files.filter((file) => /_test\.cc$|check_test\.h$|native\/build\//.test(file))).toEqual([]);
      const settingsModule = join(root, "native", "native-core", "build-settings.mjs");
      const { buildSettings } = (await import(pathToFileURL(settingsModule).href)) as {
        buildSettings(nativeDir: string, os: string): BuildSettings;
      };
      for (const os of oses) {
        const { sources, includeDirs } = buildSettings(join(root, "native"), os);
        expect(sources.length).toBeGreaterThan(8);
        for (const source of sources) expect(files).toContain(relativePath(source));
        expect(includeDirs.map(relativePath)).toContain("native/native-core");
      }
    });

    it("depends on @nuvec/native-core at build time only", () => {
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
}
