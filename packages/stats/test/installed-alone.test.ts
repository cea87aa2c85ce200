// Packs @nuvec/stats, installs the tarball with npm into a fresh project outside the workspace, and uses it
// from ESM, from CommonJS and from TypeScript: the first kind of user installs this package alone.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { scratchFolder } from "./scratch.js";

const packageDirectory = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

const { folder: project, write } = scratchFolder("nuvec-stats-install-");
// npm pack and install on a fresh machine (an empty npm cache, a cold disk) take far longer than vitest's 10 s
// hook default: minutes are fit for it, and the hook still ends a truly stuck install.
const coldCacheInstall = 600_000;

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

describe("@nuvec/stats installed alone from its packed tarball", () => {
  beforeAll(() => {
    run(npm, ["pack", "--silent", "--pack-destination", project], packageDirectory);
    const tarball = readdirSync(project).find((file) => file.endsWith(".tgz"));
    if (!tarball) throw new Error("npm pack wrote no tarball");
    write("package.json", JSON.stringify({ name: "consumer", private: true }));
    run(npm, ["install", "--no-audit", "--no-fund", "--ignore-scripts=false", `./${tarball}`], project);
  }, coldCacheInstall);

  it("ships the build, no tests, no install script, no native build", () => {
    const installed = join(project, "node_modules", "@nuvec", "stats");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    const scripts = manifest.scripts ?? {};
    for (const hook of ["preinstall", "install", "postinstall"]) expect(scripts[hook]).toBeUndefined();
    expect(manifest.gypfile).toBeUndefined();
    expect(manifest.dependencies ?? {}).toEqual({});
    const files = run(npm, ["pack", "--dry-run", "--json"], packageDirectory);
    const paths: string[] = JSON.parse(files)[0].files.map((file: { path: string }) => file.path);
    expect(paths).toContain("dist/index.js");
    expect(paths).toContain("dist/index.cjs");
    expect(paths).toContain("dist/index.d.ts");
    expect(paths).toContain("dist/index.d.cts");
    expect(paths.some((path) => path.includes(".test.") || path.startsWith("src/"))).toBe(false);
  });

  it("has nothing a browser bundle cannot take: no node: imports, no require, no process", () => {
    for (const file of ["index.js", "index.cjs"]) {
      const code = readFileSync(join(project, "node_modules", "@nuvec", "stats", "dist", file), "utf8");
      expect(code).not.toMatch(/["']node:|require\(["'](?!\.)|\bprocess\.|\bBuffer\b/);
    }
  });

  it("imports from ESM", () => {
    write(
      "esm.mjs",
      `import { allocationSize, formatBytes } from "@nuvec/stats";
console.log(allocationSize(16385), formatBytes(1610612736));`,
    );
    expect(run("node", ["esm.mjs"], project).trim()).toBe("32768 1.50 GiB");
  });

  it("requires from CommonJS", () => {
    write(
      "cjs.cjs",
      `const { mappingSize, emptyMemoryStats } = require("@nuvec/stats");
console.log(mappingSize(1, 4096), Object.keys(emptyMemoryStats()).length);`,
    );
    expect(run("node", ["cjs.cjs"], project).trim()).toBe("4096 15");
  });

  it("type-checks TypeScript that uses it (node16 resolution, ESM and CJS)", () => {
    const tsc = require.resolve("typescript/bin/tsc");
    write(
      "use.mts",
      `import { allocationSize, type MemoryStats, emptyMemoryStats, formatMemoryStats } from "@nuvec/stats";
const stats: MemoryStats = { ...emptyMemoryStats(), active: allocationSize(300) ?? 0 };
const text: string = formatMemoryStats(stats);
// @ts-expect-error: MemoryStats has no such field.
stats.notAField = 1;
export { text };
`,
    );
    write(
      "use.cts",
      `import { PAGE, mappingSize } from "@nuvec/stats";
const size: number | undefined = mappingSize(PAGE + 1);
export = size;
`,
    );
    write(
      "tsconfig.json",
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "node16",
          moduleResolution: "node16",
          noEmit: true,
          types: [],
        },
        files: ["use.mts", "use.cts"],
      }),
    );
    expect(() => run("node", [tsc, "-p", "tsconfig.json"], project)).not.toThrow();
  });
});
