#!/usr/bin/env node
// Checks that the package in the current folder is right once published: packs it as pnpm would publish
// it (workspace: ranges replaced), then checks the tarball: every sourceMappingURL in a shipped script
// resolves to a file in the tarball, the LICENSE and the metadata a registry page shows are there, and
// publint and @arethetypeswrong/cli pass. scripts/release.mjs runs the same checks on every tarball it
// is about to publish (checkTarball).
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { pnpmArgs, quietEnvironment } from "./pnpm.mjs";
import { temporaryFolder } from "./temporary.mjs";

function run(command, args, options = {}) {
  execFileSync(command, args, { stdio: "inherit", ...options });
}

/**
 * The workspace's published packages (every workspace member not marked private), as
 * `{ folder, manifest }`, in name order: found through pnpm, so any folder pnpm-workspace.yaml names counts.
 */
export function publishedWorkspacePackages(root) {
  const [command, args] = pnpmArgs(["ls", "--recursive", "--depth", "-1", "--json"]);
  const listed = JSON.parse(
    execFileSync(command, args, { cwd: root, encoding: "utf8", env: quietEnvironment() }),
  );
  return listed
    .map((entry) => ({
      folder: entry.path,
      manifest: JSON.parse(readFileSync(join(entry.path, "package.json"), "utf8")),
    }))
    .filter(({ manifest }) => !manifest.private)
    .sort((a, b) => (a.manifest.name < b.manifest.name ? -1 : 1));
}

/**
 * Packs the package in `folder` with pnpm (which runs its prepack) into `destination`; returns the tarball.
 * `environment` is added to this process's for the pack (and its prepack).
 */
export function packPackage(folder, destination, environment = {}) {
  const before = new Set(readdirSync(destination));
  const [command, args] = pnpmArgs(["pack", "--pack-destination", destination]);
  run(command, args, { cwd: folder, env: quietEnvironment({ ...process.env, ...environment }) });
  const tarball = readdirSync(destination).find((file) => file.endsWith(".tgz") && !before.has(file));
  if (!tarball) throw new Error(`packing ${folder} wrote no tarball`);
  return join(destination, tarball);
}

/**
 * Links each `name` under `folder` to the real path of its target (`{ name: target }`; a name may hold
 * folders, e.g. `@types/node`), making the folders: how a fresh project for packed packages gets the
 * workspace's dev tools, or a PATH of chosen programs only.
 */
export function linkInto(folder, targets) {
  for (const [name, target] of Object.entries(targets)) {
    const link = join(folder, name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(realpathSync(target), link, statSync(target).isDirectory() ? "dir" : "file");
  }
  return folder;
}

function listFiles(folder) {
  const found = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) found.push(...listFiles(path));
    else found.push(path);
  }
  return found;
}

// The last sourceMappingURL comment of a script is the one that counts (ECMA-426), in either comment form.
const SOURCE_MAPPING_URL =
  /(?:\/\/[#@]\s*sourceMappingURL=(\S+)\s*$|\/\*[#@]\s*sourceMappingURL=(\S+)\s*\*\/\s*$)/gm;

/**
 * Problems with the source-map comments of an unpacked package: every comment must name a file that is
 * in the package (or be a data: URL). Returns one line per problem, paths relative to `packageRoot`.
 */
export function sourceMapProblems(packageRoot) {
  const problems = [];
  const files = listFiles(packageRoot);
  const present = new Set(files.map((file) => relative(packageRoot, file).split(sep).join("/")));
  for (const file of files) {
    if (!/\.(?:[cm]?js|d\.[cm]?ts)$/.test(file)) continue;
    const text = readFileSync(file, "utf8");
    const matches = [...text.matchAll(SOURCE_MAPPING_URL)];
    const last = matches.at(-1);
    if (!last) continue;
    const url = last[1] ?? last[2];
    if (url.startsWith("data:")) continue;
    const name = relative(packageRoot, file).split(sep).join("/");
    const target = posix.normalize(posix.join(posix.dirname(name), decodeURIComponent(url.split(/[?#]/)[0])));
    if (!present.has(target))
      problems.push(`${name}: sourceMappingURL=${url} names ${target}, not in the tarball`);
  }
  return problems;
}

/**
 * The environment that packs this machine's platform package of @nuvec/metal-native from the workspace's own
 * source build (packages/metal-native/scripts/prebuild.mjs, NUVEC_PREBUILD_FROM) instead of cross-compiling it
 * with Zig: for the tests that install the packed packages. Empty when there is no source build.
 */
export function localPrebuildEnvironment(root) {
  const addon = join(
    root,
    "packages",
    "metal-native",
    "native",
    "build",
    "Release",
    "nuvec_metal_native.node",
  );
  return existsSync(addon) ? { NUVEC_PREBUILD_FROM: addon } : {};
}

/** Problems with the metadata and legal files of an unpacked package. */
export function metadataProblems(packageRoot) {
  const problems = [];
  const manifest = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8"));
  if (!readdirSync(packageRoot).some((file) => /^licen[cs]e(\.md|\.txt)?$/i.test(file)))
    problems.push("no LICENSE file");
  if (!manifest.license) problems.push("no license field");
  if (typeof manifest.repository !== "object" || !manifest.repository.url || !manifest.repository.directory)
    problems.push("repository needs a url and a directory");
  if (!manifest.homepage) problems.push("no homepage");
  if (!manifest.bugs?.url) problems.push("no bugs.url");
  if (!manifest.engines?.node) problems.push("no engines.node");
  if (!manifest.files?.includes("CHANGELOG.md")) problems.push('"files" leaves out CHANGELOG.md');
  return problems;
}

/** Every check of a packed tarball; throws with the problems found. */
export function checkTarball(tarball, { esmOnly = false } = {}) {
  const temporary = temporaryFolder("nuvec-unpack-");
  const unpacked = temporary.path;
  try {
    execFileSync("tar", ["-xzf", tarball, "-C", unpacked]);
    const packageRoot = join(unpacked, "package");
    if (!statSync(packageRoot).isDirectory()) throw new Error(`${tarball} has no package/ folder`);
    const problems = [...metadataProblems(packageRoot), ...sourceMapProblems(packageRoot)];
    if (problems.length > 0)
      throw new Error(`${tarball}:\n${problems.map((problem) => `  ${problem}`).join("\n")}`);
  } finally {
    temporary.remove();
  }
  const bin = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", ".bin");
  const env = {
    ...process.env,
    PATH: `${bin}${process.platform === "win32" ? ";" : ":"}${process.env.PATH}`,
  };
  run("publint", ["run", tarball, "--strict"], { env });
  const profile = esmOnly ? ["--profile", "esm-only"] : [];
  run("attw", [tarball, "--format", "table-flipped", ...profile], { env });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const temporary = temporaryFolder("nuvec-pack-");
  const out = temporary.path;
  try {
    const tarball = packPackage(process.cwd(), out);
    checkTarball(tarball, { esmOnly: process.argv.includes("--esm-only") });
  } catch (error) {
    console.error(`check-package: ${error instanceof Error ? error.message : error}`);
    process.exitCode = 1;
  } finally {
    temporary.remove();
  }
}
