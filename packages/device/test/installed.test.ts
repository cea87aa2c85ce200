// The full device for a runtime, installed as a user would: every package packed as pnpm would publish it
// (workspace ranges replaced), the tarballs installed with npm into a fresh project outside the workspace (the
// addon's prebuild for this platform, or a build from source by its install script), then used from ESM — the real backend and the mock.
// Needs the npm registry for the addon's build tools (node-addon-api, node-gyp); NUVEC_SKIP_INSTALL_TEST=1 skips.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const packages = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const names = ["stats", "allocator", "residency", "metal-native", "device"];
const skip = process.env.NUVEC_SKIP_INSTALL_TEST === "1" || process.platform !== "linux";
let project = "";

function pnpm(args: string[], cwd: string): void {
  const execPath = process.env.npm_execpath ?? "";
  if (/pnpm/.test(execPath)) {
    const viaNode = /\.[cm]?js$/.test(execPath);
    execFileSync(viaNode ? process.execPath : execPath, viaNode ? [execPath, ...args] : args, {
      cwd,
      stdio: "pipe",
    });
  } else {
    const manifest = JSON.parse(readFileSync(join(packages, "..", "package.json"), "utf8"));
    execFileSync("npx", ["--yes", manifest.packageManager, ...args], { cwd, stdio: "pipe" });
  }
}

describe.skipIf(skip)("@nuvec/device installed from its packed tarballs", () => {
  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), "nuvec-device-install-"));
    for (const name of names) pnpm(["pack", "--pack-destination", project], join(packages, name));
    const tarballs = readdirSync(project).filter((file) => file.endsWith(".tgz"));
    expect(tarballs).toHaveLength(names.length);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "runtime", private: true, type: "module" }),
    );
    execFileSync("npm", ["install", "--no-audit", "--no-fund", ...tarballs.map((file) => `./${file}`)], {
      cwd: project,
      stdio: "pipe",
    });
    // Minutes, for a fresh machine: an empty npm cache and pnpm store (pnpm itself may be fetched by npx).
  }, 600_000);

  afterAll(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it("opens the real backend and the mock, and the published ranges point at the published packages", () => {
    writeFileSync(
      join(project, "use.mjs"),
      `import { Device } from "@nuvec/device";
import { MockBackend } from "@nuvec/metal-native/mock";
const results = {};
for (const [name, options] of [["host", {}], ["mock", { backend: new MockBackend() }]]) {
  const device = Device.open(options);
  const buffer = device.malloc(3000);
  buffer.bytes().fill(7);
  results[name] = { platform: device.info().platform, active: device.memoryStats().active, byte: buffer.bytes()[2999] };
  buffer.free();
  device.close();
}
console.log(JSON.stringify(results));`,
    );
    const output = execFileSync(process.execPath, ["use.mjs"], { cwd: project, encoding: "utf8" });
    expect(JSON.parse(output)).toEqual({
      host: { platform: "host", active: 3072, byte: 7 },
      mock: { platform: "mock", active: 3072, byte: 7 },
    });
    // On linux-x64 the tarball ships an N-API prebuild (made at pack time), loaded without compiling anything.
    const installed = join(project, "node_modules/@nuvec/metal-native");
    expect(
      existsSync(join(installed, `prebuilds/${process.platform}-${process.arch}/@nuvec+metal-native.node`)),
    ).toBe(true);
    expect(existsSync(join(installed, "build/Release/nuvec_metal_native.node"))).toBe(false);
    const device = JSON.parse(readFileSync(join(project, "node_modules/@nuvec/device/package.json"), "utf8"));
    for (const range of Object.values(device.dependencies as Record<string, string>)) {
      expect(range).not.toMatch(/workspace:/);
    }
  });
});
