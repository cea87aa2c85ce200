// The Linux prebuilds, built here as they are packed (scripts/prebuild.mjs: Zig, `<arch>-linux-gnu.2.28`):
// they ask for no glibc symbol newer than 2.28 (`objdump -T`), need no C++ library from the system, export
// only the Node-API entry points, and pass the whole contract suite — x64 natively, arm64 under
// qemu-aarch64-static with Node.js 20 for arm64 (scripts/run-contract.mjs).
// Only on Linux x64: the Zig compiler used (an npm package) exists for that host only. A release job: run by
// `npm run test:prebuilds` (vitest.prebuilds.config.ts) and by `pnpm release`, not by `npm test`.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { contractRunner } from "../scripts/run-contract.mjs";

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
    for (const target of targets)
      execFileSync(
        process.execPath,
        [
          join(root, "scripts/prebuild.mjs"),
          target,
          "--out",
          join(directory, `${target}.node`),
          "--no-contract",
        ],
        { stdio: "pipe" },
      );
  }, 600_000);

  afterAll(() => {
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it.each(targets)("%s: no glibc symbol newer than 2.28", (target) => {
    const versions = glibcVersions(join(directory, `${target}.node`));
    expect(versions.length).toBeGreaterThan(0);
    const highest = versions.sort(compareVersions).at(-1) ?? "";
    expect(compareVersions(highest, "GLIBC_2.28")).toBeLessThanOrEqual(0);
  });

  it.each(targets)(
    "%s: needs no C++ runtime from the system, exports only the Node-API entry points",
    (target) => {
      const file = join(directory, `${target}.node`);
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
    },
  );

  /** Runs the contract suite on the prebuilt binary of `target` (scripts/run-contract.mjs); its output. */
  function passesContract(target: (typeof targets)[number]): string {
    const script = join(root, "scripts/run-contract.mjs");
    const file = join(directory, `${target}.node`);
    const result = spawnSync(process.execPath, [script, file, "--target", target], { encoding: "utf8" });
    expect(result.stdout).toMatch(/ℹ pass [1-9]/);
    expect(result.stdout).toMatch(/ℹ fail 0/);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    return result.stdout;
  }

  it("linux-x64-gnu passes the whole contract suite natively", () => {
    passesContract("linux-x64-gnu");
  }, 300_000);

  it("linux-arm64-gnu passes the whole contract suite under qemu-aarch64", (context) => {
    const runner = contractRunner("linux-arm64-gnu") as { missing?: string };
    if (runner.missing && !mustRunEverything)
      context.skip(`${runner.missing} (.ci/system-packages does, where apt-get is)`);
    expect(runner.missing).toBeUndefined();
    expect(passesContract("linux-arm64-gnu")).toContain("under ");
  }, 600_000);
});
