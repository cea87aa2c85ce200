#!/usr/bin/env node
// The docs test: every TypeScript block of every README and doc (the root's README.md, docs/*.md, and the
// Markdown files at the top of each workspace package) is what a user would paste into their own project, so
// it is checked there, against what npm would give them:
//   1. packs every published workspace package for this platform with pnpm (workspace: ranges replaced,
//      prepack run; this machine's platform package holds the workspace's source build, see
//      localPrebuildEnvironment);
//   2. makes a fresh project outside the workspace and installs the tarballs into it with npm;
//   3. typechecks every block against the packed types twice, with the settings the root README documents
//      (its ```json tsconfig block) and with moduleResolution bundler, and typechecks every published entry's
//      declarations with those settings and skipLibCheck off (with and without @types/node);
//   4. runs the blocks marked `ts runnable` with Node (compiled by tsc, so `using` runs on Node 20), in a
//      folder holding a small `model.safetensors` for the blocks that map one; a block importing vitest is
//      a test file and runs under vitest.
// Every block is marked: ```ts runnable (typechecked and run) or ```ts fragment (deliberately partial, e.g.
// `declare const` for what the reader's program has: typechecked only). An unmarked block fails the test,
// so a new snippet cannot slip past unchecked.
// The dev tools (typescript, @types/node, vitest) are linked from the workspace, pinned as they are there.
// Usage: node scripts/docs-test.mjs [--keep]   (--keep leaves the fresh project and prints its path)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  linkInto,
  localPrebuildEnvironment,
  packPackage,
  publishedWorkspacePackages,
} from "./check-package.mjs";
import { quietEnvironment } from "./pnpm.mjs";
import { scratchFolder } from "./temporary.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const keep = process.argv.includes("--keep");
// A cold npm cache downloads the tarballs' registry dependencies: allow for a slow network.
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const RUN_TIMEOUT_MS = 2 * 60_000;

/** The docs a user reads: the root's README, docs/*.md, and the Markdown files of every workspace package. */
export function readmeFiles() {
  const markdown = (folder) =>
    existsSync(folder)
      ? readdirSync(folder)
          .filter((name) => name.endsWith(".md") && name !== "CHANGELOG.md")
          .sort()
          .map((name) => join(folder, name))
      : [];
  const files = [join(root, "README.md"), ...markdown(join(root, "docs"))];
  for (const group of ["packages", "apps"])
    for (const name of readdirSync(join(root, group)).sort())
      files.push(...markdown(join(root, group, name)));
  return files;
}

/** The compiler options the root README documents: its ```json tsconfig block. */
export function documentedCompilerOptions(markdown) {
  const block = /^```json tsconfig\n([\s\S]*?)^```/m.exec(markdown);
  if (!block) throw new Error("README.md: no ```json tsconfig block (the documented TypeScript settings)");
  return JSON.parse(block[1]).compilerOptions;
}

/** A module importing every entry of the published packages (their `exports`, package.json left out). */
function everyEntry(packages, { withNode }) {
  const lines = [];
  for (const { manifest } of packages) {
    if (typeof manifest.exports !== "object" || manifest.private) continue;
    for (const subpath of Object.keys(manifest.exports)) {
      if (subpath === "./package.json" || (!withNode && subpath === "./node")) continue;
      lines.push(`export * as entry${lines.length} from "${manifest.name}${subpath.slice(1)}";`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/**
 * The TypeScript blocks of a Markdown text: `{ line, flags, code }` for every fence whose info string
 * starts with ts or typescript (line: 1-based line of the opening fence).
 */
export function typescriptBlocks(markdown) {
  const blocks = [];
  const lines = markdown.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript|tsx|mts)\b(.*)$/.exec(lines[index]);
    if (!open) continue;
    const fence = open[2];
    const body = [];
    let end = index + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) body.push(lines[end++]);
    blocks.push({
      line: index + 1,
      flags: open[4].trim().split(/\s+/).filter(Boolean),
      code: body.join("\n"),
    });
    index = end;
  }
  return blocks;
}

/** The packages `npm install …` commands in a text install (flags left out; stops at the first non-name). */
export function installedByText(text) {
  const names = new Set();
  for (const match of text.matchAll(/\bnpm (?:install|i|add)\b([^\n]*)/g)) {
    for (const word of match[1].trim().split(/\s+/)) {
      if (word.startsWith("-")) continue;
      const bare = word.replace(/[);:,.]+$/, "");
      const name = bare.replace(/(?<=.)@[^/]*$/, ""); // a version or tag
      if (!/^(?:@[a-z0-9._-]+\/)?[a-z0-9._-]+$/.test(name)) break;
      names.add(name);
      if (bare !== word) break; // punctuation ended the command
    }
  }
  return names;
}

/** The packages a block imports (bare specifiers, `node:` built-ins left out). */
export function importedPackages(code) {
  const names = new Set();
  for (const match of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g)) {
    const specifier = match[1];
    if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) continue;
    names.add(
      specifier
        .split("/")
        .slice(0, specifier.startsWith("@") ? 2 : 1)
        .join("/"),
    );
  }
  return names;
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: "inherit", timeout: RUN_TIMEOUT_MS, ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

/**
 * Whether npm would install a package on this machine (its `os`, `cpu` and `libc` fields): a per-platform
 * package of another platform is left out of the fresh project, as npm leaves it out of a user's.
 */
function installsHere(manifest) {
  const allows = (list, value) => {
    if (!Array.isArray(list) || list.length === 0) return true;
    const denied = list.filter((entry) => entry.startsWith("!")).map((entry) => entry.slice(1));
    const allowed = list.filter((entry) => !entry.startsWith("!"));
    return !denied.includes(value) && (allowed.length === 0 || allowed.includes(value));
  };
  const glibc = process.platform === "linux" && process.report?.getReport().header.glibcVersionRuntime;
  const libc = process.platform !== "linux" ? undefined : glibc ? "glibc" : "musl";
  return (
    allows(manifest.os, process.platform) &&
    allows(manifest.cpu, process.arch) &&
    (libc === undefined || allows(manifest.libc, libc))
  );
}

/** A safetensors file of one float32 tensor of 4 elements: what a block mapping "model.safetensors" maps. */
function tinySafetensors() {
  const header = Buffer.from(JSON.stringify({ w: { dtype: "F32", shape: [4], data_offsets: [0, 16] } }));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([length, header, Buffer.from(new Float32Array([1, 2, 3, 4]).buffer)]);
}

function main() {
  const problems = [];
  const blocks = [];
  for (const file of readmeFiles()) {
    const readme = relative(root, file);
    const markdown = readFileSync(file, "utf8");
    // What a reader of this README has installed: its own package, and what its shell blocks install.
    const shellBlocks = [...markdown.matchAll(/^```(?:sh|bash|shell|console)\b[^\n]*\n([\s\S]*?)^```/gm)];
    const readmeInstalls = installedByText(shellBlocks.map((match) => match[1]).join("\n"));
    const manifest = join(dirname(file), "package.json");
    if (file !== join(root, "README.md") && existsSync(manifest))
      readmeInstalls.add(JSON.parse(readFileSync(manifest, "utf8")).name);
    for (const block of typescriptBlocks(markdown)) {
      const where = `${readme}:${block.line}`;
      // A block may say what it needs installed in a comment (`// npm install @nuvec/stats`).
      const installed = new Set([...readmeInstalls, ...installedByText(block.code)]);
      for (const name of importedPackages(block.code)) {
        if (!installed.has(name))
          problems.push(
            `${where}: imports ${name}, which neither the README's install line nor the block installs`,
          );
      }
      const runnable = block.flags.includes("runnable");
      const fragment = block.flags.includes("fragment");
      if (runnable === fragment) {
        problems.push(
          `${where}: mark the block \`ts runnable\` or \`ts fragment\` (${block.flags.join(" ") || "unmarked"})`,
        );
        continue;
      }
      const name = `${readme.replace(/README\.md$/, "readme").replace(/[^a-z0-9]+/gi, "-")}-${block.line}`;
      const isTest = /from\s+["']vitest["']/.test(block.code);
      blocks.push({ ...block, where, runnable, name: isTest ? `${name}.test` : name, isTest });
    }
  }
  if (problems.length > 0) {
    console.error(`docs test:\n${problems.map((problem) => `  ${problem}`).join("\n")}`);
    return 1;
  }

  // Removed on every way out unless kept (--keep).
  const scratch = scratchFolder("nuvec-docs-", keep, "docs test: the fresh project");
  const project = scratch.path;
  try {
    // 1. Pack.
    const tarballs = join(project, "tarballs");
    mkdirSync(tarballs);
    // This machine's platform package holds the workspace's source build (its contract suite runs at pack
    // time); the cross-compiled prebuilds are `npm run test:prebuilds`'s.
    const prebuilt = localPrebuildEnvironment(root);
    for (const { folder, manifest } of publishedWorkspacePackages(root)) {
      if (installsHere(manifest)) packPackage(folder, tarballs, prebuilt);
      else console.log(`docs test: ${manifest.name} is for another platform, left out`);
    }

    // 2. A fresh project that installs them as a user would.
    const app = join(project, "app");
    mkdirSync(app);
    writeFileSync(
      join(app, "package.json"),
      `${JSON.stringify({ name: "docs-test", private: true, type: "module" }, null, 2)}\n`,
    );
    const packed = readdirSync(tarballs).map((file) => join(tarballs, file));
    console.log(`docs test: installing ${packed.length} packed packages into ${app}`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const installed = run(
      npm,
      ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", ...packed],
      {
        cwd: app,
        timeout: INSTALL_TIMEOUT_MS,
        // The workspace's pnpm settings are not the user's: install with npm's defaults.
        env: quietEnvironment(
          Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(npm|pnpm)_/i.test(key))),
        ),
      },
    );
    if (installed !== 0) return 1;
    const tools = ["typescript", "@types/node", "vitest"];
    linkInto(
      join(app, "node_modules"),
      Object.fromEntries(tools.map((tool) => [tool, join(root, "node_modules", tool)])),
    );

    // 3. Typecheck under both resolutions.
    const source = join(app, "docs");
    mkdirSync(source);
    for (const block of blocks) {
      // `export {}` keeps a block that imports nothing a module, so blocks never share globals.
      writeFileSync(join(source, `${block.name}.ts`), `// ${block.where}\n${block.code}\nexport {};\n`);
    }
    // The blocks: the documented settings; the declarations of vitest (a test block's import) are not
    // nuvec's to check, so their check is the next step's, over nuvec's entries alone.
    const documented = documentedCompilerOptions(readFileSync(join(root, "README.md"), "utf8"));
    const common = { ...documented, skipLibCheck: true };
    const configs = {
      node16: { ...common, outDir: "out" },
      bundler: { ...common, module: "esnext", moduleResolution: "bundler", noEmit: true },
    };
    // Every published entry's declarations, with the documented settings and skipLibCheck off: with
    // @types/node, and without it for every entry but the Node-only ones (browsers).
    const declarations = join(app, "declarations");
    mkdirSync(declarations);
    const published = publishedWorkspacePackages(root).filter(({ manifest }) => installsHere(manifest));
    writeFileSync(join(declarations, "node.ts"), everyEntry(published, { withNode: true }));
    writeFileSync(join(declarations, "browser.ts"), everyEntry(published, { withNode: false }));
    const declarationChecks = {
      "declarations, @types/node": { files: ["declarations/node.ts"], types: documented.types },
      "declarations, no @types/node": { files: ["declarations/browser.ts"], types: [] },
    };
    const tsc = join(app, "node_modules", "typescript", "bin", "tsc");
    let failed = 0;
    for (const [resolution, compilerOptions] of Object.entries(configs)) {
      const config = join(app, `tsconfig.${resolution}.json`);
      writeFileSync(config, JSON.stringify({ compilerOptions, include: ["docs"] }, null, 2));
      console.log(`docs test: typechecking ${blocks.length} blocks (moduleResolution ${resolution})`);
      if (run(process.execPath, [tsc, "-p", config, "--pretty", "false"], { cwd: app }) !== 0) failed++;
    }
    for (const [name, { files, types }] of Object.entries(declarationChecks)) {
      const config = join(app, `tsconfig.${name.replace(/[^a-z]+/gi, "-")}.json`);
      const compilerOptions = { ...documented, types, skipLibCheck: false, noEmit: true };
      writeFileSync(config, JSON.stringify({ compilerOptions, files }, null, 2));
      console.log(`docs test: typechecking the published declarations (${name}, the documented settings)`);
      if (run(process.execPath, [tsc, "-p", config, "--pretty", "false"], { cwd: app }) !== 0) failed++;
    }
    if (failed > 0) return 1;

    // 4. Run the runnable ones, each in a folder of its own.
    const vitest = join(app, "node_modules", "vitest", "vitest.mjs");
    let ran = 0;
    for (const block of blocks.filter((candidate) => candidate.runnable)) {
      const cwd = join(project, "run", block.name);
      mkdirSync(cwd, { recursive: true });
      writeFileSync(join(cwd, "model.safetensors"), tinySafetensors());
      const compiled = join(app, "out", `${block.name}.js`);
      console.log(`docs test: running ${block.where}`);
      const status = block.isTest
        ? run(process.execPath, [vitest, "run", "--root", app, "--dir", "out", `out/${block.name}.js`], {
            cwd: app,
          })
        : run(process.execPath, [compiled], { cwd });
      if (status !== 0) {
        console.error(`docs test: ${block.where} failed when run (exit ${status})`);
        failed++;
      }
      ran++;
    }
    const files = new Set(blocks.map((block) => block.where.split(":")[0])).size;
    console.log(
      `docs test: ${blocks.length} blocks of ${files} docs typechecked (documented settings, bundler) with every published declaration, ${ran} run, ${failed} failed`,
    );
    return failed > 0 ? 1 : 0;
  } finally {
    scratch.remove();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main();
