// The fast part of the prebuild machinery, in the main suite: this machine's addon (the workspace's source
// build) goes through scripts/prebuild.mjs as its platform package's prepack does (NUVEC_PREBUILD_FROM), and
// the contract suite that gates every packed binary runs on it and passes. Cross-compiling every platform's
// binary with Zig is test/prebuilds.test.ts, run by `npm run test:prebuilds`.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { whyNotHere } from "../scripts/prebuild.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sourceBuild = join(root, "native", "build", "Release", "nuvec_metal_native.node");
const here =
  process.platform === "linux" ? `linux-${process.arch}-gnu` : `${process.platform}-${process.arch}`;
const hasPlatformPackage = ["linux-x64-gnu", "linux-arm64-gnu", "darwin-arm64"].includes(here);
const scratch = mkdtempSync(join(tmpdir(), "nuvec-prebuild-here-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function prebuild(target: string, out: string) {
  return spawnSync(process.execPath, [join(root, "scripts", "prebuild.mjs"), target, "--out", out], {
    encoding: "utf8",
    env: { ...process.env, NUVEC_PREBUILD_FROM: sourceBuild },
  });
}

describe.runIf(hasPlatformPackage && existsSync(sourceBuild))("this machine's prebuilt addon", () => {
  it("is packed from the source build as its prepack packs it, and passes the contract suite", () => {
    const out = join(scratch, `${here}.node`);
    const result = prebuild(here, out);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/ℹ pass [1-9]/);
    expect(result.stdout).toMatch(/ℹ fail 0/);
    expect(result.stdout).toMatch(
      new RegExp(`contract suite on ${here} \\(.*\\): [1-9]\\d* passed, 0 failed`),
    );
    expect(readFileSync(out).equals(readFileSync(sourceBuild))).toBe(true);
    // Its SHA-256 beside it, which the loader checks the installed binary against.
    const sha256 = createHash("sha256").update(readFileSync(out)).digest("hex");
    expect(readFileSync(`${out}.sha256`, "utf8")).toBe(`${sha256}  ${here}.node\n`);
  });

  it("says when it replaces a binary already there (a committed one, or the last pack's), with both SHA-256s", () => {
    const out = join(scratch, "replaced.node");
    writeFileSync(out, "an older binary");
    const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
    const pack = () =>
      spawnSync(
        process.execPath,
        [join(root, "scripts", "prebuild.mjs"), here, "--out", out, "--no-contract"],
        {
          encoding: "utf8",
          env: { ...process.env, NUVEC_PREBUILD_FROM: sourceBuild },
        },
      );
    const first = pack();
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain(
      `prebuild ${here}: replacing ${out} in place (SHA-256 ${sha256("an older binary")} before, ` +
        `${sha256(readFileSync(sourceBuild))} now)\n`,
    );
    expect(readFileSync(out).equals(readFileSync(sourceBuild))).toBe(true);
    const again = pack();
    expect(again.stdout).toContain(
      `prebuild ${here}: ${out} is already this build (SHA-256 ${sha256(readFileSync(sourceBuild))})\n`,
    );
  });

  it("is never packed for another platform's package", () => {
    const other = here === "linux-x64-gnu" ? "linux-arm64-gnu" : "linux-x64-gnu";
    const out = join(scratch, `${other}.node`);
    const result = prebuild(other, out);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `NUVEC_PREBUILD_FROM packs this machine's own addon (${here}), not ${other}'s`,
    );
    expect(existsSync(out)).toBe(false);
  });
});

describe.runIf(hasPlatformPackage && process.platform !== "win32")("NUVEC_PREBUILD_FROM", () => {
  it.each<[string, () => string]>([
    ["/dev/zero", () => "/dev/zero"],
    [
      "a FIFO",
      () => {
        const fifo = join(scratch, "fifo.node");
        expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
        return fifo;
      },
    ],
    [
      "a directory",
      () => {
        const folder = join(scratch, "folder.node");
        mkdirSync(folder);
        return folder;
      },
    ],
  ])("naming %s: refused at once, nothing written (never read forever)", (_label, place) => {
    const from = place();
    const out = join(scratch, `from-${basename(from)}.node`);
    const result = spawnSync(process.execPath, [join(root, "scripts", "prebuild.mjs"), here, "--out", out], {
      encoding: "utf8",
      env: { ...process.env, NUVEC_PREBUILD_FROM: from },
      timeout: 30_000,
    });
    expect(result.signal).toBeNull();
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      `prebuild ${here}: NUVEC_PREBUILD_FROM names ${from}, which is not a regular .node file\n`,
    );
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.partial`)).toBe(false);
  });
});

describe("which targets this machine can prebuild", () => {
  it.runIf(process.platform !== "darwin")("darwin-arm64 only on an Apple-silicon Mac", () => {
    expect(whyNotHere("darwin-arm64")).toMatch(/Apple-silicon Mac only/);
  });

  it.runIf(here === "linux-x64-gnu")("both Linux targets on Linux x64 (arm64 when qemu can run it)", () => {
    expect(whyNotHere("linux-x64-gnu")).toBeUndefined();
    const arm64 = whyNotHere("linux-arm64-gnu");
    if (arm64 !== undefined) expect(arm64).toMatch(/qemu|arm64/);
  });

  it("names an unknown target", () => {
    expect(whyNotHere("plan9-mips")).toBe("unknown target plan9-mips");
  });
});
