// The pure parts of the workspace's scripts: what the package check, the docs test and the release decide.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { metadataProblems, sourceMapProblems } from "./check-package.mjs";
import { importedPackages, installedByText, typescriptBlocks } from "./docs-test.mjs";
import { publishOrder } from "./release.mjs";

const folders = [];
function unpacked(files) {
  const folder = mkdtempSync(join(tmpdir(), "nuvec-scripts-test-"));
  folders.push(folder);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(folder, path, ".."), { recursive: true });
    writeFileSync(join(folder, path), text);
  }
  return folder;
}
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe("check-package: source maps", () => {
  it("reports a sourceMappingURL naming a file the tarball lacks, in either comment form", () => {
    const folder = unpacked({
      "dist/index.js": "export {};\n//# sourceMappingURL=index.js.map",
      "dist/index.cjs": "module.exports = {};\n/*# sourceMappingURL=index.cjs.map */\n",
    });
    expect(sourceMapProblems(folder).sort()).toEqual([
      "dist/index.cjs: sourceMappingURL=index.cjs.map names dist/index.cjs.map, not in the tarball",
      "dist/index.js: sourceMappingURL=index.js.map names dist/index.js.map, not in the tarball",
    ]);
  });

  it("accepts a map that ships, an inline map, and a script without a comment", () => {
    const folder = unpacked({
      "dist/a.js": "export {};\n//# sourceMappingURL=maps/a.js.map\n",
      "dist/maps/a.js.map": "{}",
      "dist/b.js": "export {};\n//# sourceMappingURL=data:application/json;base64,e30=\n",
      "dist/c.js": "export const url = 'not a comment: sourceMappingURL=x.map';\n",
    });
    expect(sourceMapProblems(folder)).toEqual([]);
  });
});

describe("check-package: metadata", () => {
  const complete = {
    name: "@nuvec/x",
    license: "MIT",
    repository: { type: "git", url: "git+https://github.com/nuvec/nuvec.git", directory: "packages/x" },
    homepage: "https://github.com/nuvec/nuvec#readme",
    bugs: { url: "https://github.com/nuvec/nuvec/issues" },
    engines: { node: ">=20.19" },
    files: ["dist", "README.md", "CHANGELOG.md"],
  };

  it("passes a complete package", () => {
    const folder = unpacked({ "package.json": JSON.stringify(complete), LICENSE: "MIT" });
    expect(metadataProblems(folder)).toEqual([]);
  });

  it("names each missing piece", () => {
    const { repository, bugs, engines, ...rest } = complete;
    const manifest = { ...rest, repository: { url: repository.url }, files: ["dist"] };
    const folder = unpacked({ "package.json": JSON.stringify(manifest) });
    expect(metadataProblems(folder)).toEqual([
      "no LICENSE file",
      "repository needs a url and a directory",
      "no bugs.url",
      "no engines.node",
      '"files" leaves out CHANGELOG.md',
    ]);
  });
});

describe("docs test: reading READMEs", () => {
  it("finds the TypeScript blocks with their line and marks, and nothing else", () => {
    const markdown =
      "# x\n```sh\nnpm install @nuvec/device\n```\n" + // lines 1-4
      "```ts runnable\nconst a = 1;\n```\n```typescript fragment\ndeclare const b: number;\n```\n" + // 5-10
      "```js\nno\n```\n```ts\n```"; // 11-15
    expect(typescriptBlocks(markdown)).toEqual([
      { line: 5, flags: ["runnable"], code: "const a = 1;" },
      { line: 8, flags: ["fragment"], code: "declare const b: number;" },
      { line: 14, flags: [], code: "" },
    ]);
  });

  it("reads what install commands install, stopping at prose", () => {
    const text = [
      "npm install @nuvec/device",
      "// A vitest test file (npm install --save-dev vitest); the mock comes with @nuvec/other.",
      "npm i @nuvec/stats@1.2.0 left-pad, and then more words",
    ].join("\n");
    expect([...installedByText(text)].sort()).toEqual([
      "@nuvec/device",
      "@nuvec/stats",
      "left-pad",
      "vitest",
    ]);
  });

  it("reads which packages a block imports, built-ins and relative paths left out", () => {
    const code = [
      'import { Device } from "@nuvec/device";',
      'import { MockBackend } from "@nuvec/device/mock";',
      'import { expect } from "vitest";',
      'import { readFileSync } from "node:fs";',
      'import "./local.js";',
      'const lazy = await import("fast-check/lib");',
    ].join("\n");
    expect([...importedPackages(code)].sort()).toEqual(["@nuvec/device", "fast-check", "vitest"]);
  });
});

describe("release: publish order", () => {
  it("publishes every package after the workspace packages it needs", () => {
    const order = publishOrder([
      { name: "@nuvec/device", dependencies: { "@nuvec/stats": "^1", "@nuvec/metal-native": "^1" } },
      { name: "@nuvec/metal-native", dependencies: { "@nuvec/stats": "^1", "node-gyp-build": "4" } },
      { name: "@nuvec/addon-linux", optionalDependencies: {} },
      { name: "@nuvec/stats" },
    ]).map((manifest) => manifest.name);
    expect(order).toEqual(["@nuvec/addon-linux", "@nuvec/stats", "@nuvec/metal-native", "@nuvec/device"]);
  });

  it("counts optional and peer dependencies, and refuses a cycle", () => {
    const order = publishOrder([
      { name: "a", optionalDependencies: { c: "1" } },
      { name: "b", peerDependencies: { a: "1" } },
      { name: "c" },
    ]).map((manifest) => manifest.name);
    expect(order).toEqual(["c", "a", "b"]);
    expect(() =>
      publishOrder([
        { name: "a", dependencies: { b: "1" } },
        { name: "b", dependencies: { a: "1" } },
      ]),
    ).toThrow("dependency cycle: a -> b -> a");
  });
});
