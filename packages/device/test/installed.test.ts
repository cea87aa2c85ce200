// @nuvec/device installed as a user would, from tarballs packed as they are published (workspace ranges
// replaced; the linux-x64 platform package holds the workspace's source build, and its prepack runs the
// contract suite on it),
// into fresh projects outside the workspace, by npm 10, npm 11 and pnpm 12, with no compiler on PATH (PATH is
// a folder holding only `node`): each install exits 0, prints no word about scripts or node-gyp, builds
// nothing, and the project then uses the host backend (from the platform package) and the mock. A platform
// with no package (the platform tarball left out) installs the same, the mock works, and loadNativeBackend()
// throws NativeUnavailableError naming the build command (which scripts/registry-test.mjs runs).
// Linux x64 only (the platform package is built there). Needs the npm registry (node-addon-api, npm 10);
// NUVEC_SKIP_INSTALL_TEST=1 skips.
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { pnpmArgs, pnpmExecutable, quietEnvironment } from "../../../scripts/pnpm.mjs";
import { scratchFolder } from "../../stats/test/scratch.js";

const packages = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const names = ["stats", "allocator", "residency", "metal-native", "device", "metal-native-linux-x64-gnu"];
const platformTarball = "nuvec-metal-native-linux-x64-gnu-0.0.0.tgz";
const skip =
  process.env.NUVEC_SKIP_INSTALL_TEST === "1" || process.platform !== "linux" || process.arch !== "x64";
const COLD = 600_000; // a cold npm cache fetches npm 10 and node-addon-api
const { folder: scratch } = scratchFolder("nuvec-device-install-");
let tarballs = "";
let toollessBin = "";

/** A program on the PATH this test was started with, resolved through links. */
function onPath(name: string): string {
  for (const directory of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(directory, name);
    if (directory && existsSync(candidate)) return realpathSync(candidate);
  }
  throw new Error(`${name} is not on PATH`);
}

/**
 * The environment of a user's shell with only `node` on PATH (no cc, c++, make, python3), and none of the
 * variables pnpm and vitest set (NODE_PATH would reach the workspace's packages).
 */
function toollessEnvironment(): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(npm_|PNPM_|INIT_CWD$|NODE_OPTIONS$|NODE_PATH$|VITEST|TURBO)/i.test(key)) environment[key] = value;
  environment.PATH = toollessBin;
  return quietEnvironment(environment);
}

/** The program and leading arguments of a package manager: a script runs under node, a binary as it is. */
function managerCommand(entry: string): [string, string[]] {
  return /\.[cm]?js$/.test(entry) ? [process.execPath, [entry]] : [entry, []];
}

interface Managers {
  npm10: string;
  npm11: string;
  pnpm: string;
}
const managers = {} as Managers;

/** A fresh project depending on the tarballs (all of them, or all but the platform package). */
function freshProject(label: string, withPlatformPackage: boolean): string {
  const project = join(scratch, label);
  mkdirSync(project);
  const dependencies: Record<string, string> = {};
  for (const file of readdirSync(tarballs)) {
    if (!withPlatformPackage && file === platformTarball) continue;
    const name = `@nuvec/${file.replace(/^nuvec-/, "").replace(/-0\.0\.0\.tgz$/, "")}`;
    dependencies[name] = `file:${join(tarballs, file)}`;
  }
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: `runtime-${label}`, private: true, type: "module", dependencies }, null, 2),
  );
  // pnpm resolves the dependencies of a tarball from the registry, where these versions are not: point them
  // at the tarballs (npm takes the top-level ones as they are).
  writeFileSync(
    join(project, "pnpm-workspace.yaml"),
    `overrides:\n${Object.entries(dependencies)
      .map(([name, spec]) => `  "${name}": "${spec}"`)
      .join("\n")}\n`,
  );
  return project;
}

/** Installs with a package manager and no compiler on PATH; returns everything it printed. */
function install(manager: keyof Managers, project: string): string {
  const [program, lead] = managerCommand(managers[manager]);
  const args =
    manager === "pnpm" ? ["install", "--no-frozen-lockfile"] : ["install", "--no-audit", "--no-fund"];
  const result = spawnSync(program, [...lead, ...args], {
    cwd: project,
    env: toollessEnvironment(),
    encoding: "utf8",
    timeout: COLD,
  });
  const output = `${result.stdout}\n${result.stderr}`;
  expect(result.status, output).toBe(0);
  return output;
}

const useScript = `import { Device } from "@nuvec/device";
import { loadNativeBackend, NativeUnavailableError } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import { createRequire } from "node:module";
const results = {};
let native;
try {
  loadNativeBackend();
  native = "loaded";
} catch (error) {
  native = { unavailable: error instanceof NativeUnavailableError, code: error.code, reason: error.reason, message: error.message };
}
results.native = native;
const cases = native === "loaded" ? [["host", {}], ["mock", { backend: new MockBackend() }]] : [["mock", { backend: new MockBackend() }]];
for (const [name, options] of cases) {
  const device = Device.open(options);
  const buffer = device.malloc(3000);
  buffer.bytes().fill(7);
  results[name] = { platform: device.info().platform, active: device.memoryStats().active, byte: buffer.bytes()[2999] };
  buffer.free();
  device.close();
}
const fromNative = createRequire(createRequire(import.meta.url).resolve("@nuvec/metal-native"));
try {
  results.addon = fromNative.resolve("@nuvec/metal-native-linux-x64-gnu/nuvec_metal_native.node");
} catch {
  results.addon = null;
}
console.log(JSON.stringify(results));`;

function use(project: string): Record<string, unknown> {
  writeFileSync(join(project, "use.mjs"), useScript);
  const output = execFileSync(process.execPath, ["use.mjs"], {
    cwd: project,
    env: toollessEnvironment(),
    encoding: "utf8",
  });
  return JSON.parse(output);
}

/** Nothing about scripts, builds or node-gyp: no approval asked, no warning, nothing compiled. */
function expectSilentAboutScripts(output: string): void {
  expect(output).not.toMatch(/script|node-gyp|gyp info|ERR_PNPM_IGNORED_BUILDS|approve-builds|allowBuilds/i);
}

describe.skipIf(skip)("@nuvec/device installed from its packed tarballs, with no compiler on PATH", () => {
  beforeAll(() => {
    tarballs = join(scratch, "tarballs");
    mkdirSync(tarballs);
    toollessBin = join(scratch, "bin");
    mkdirSync(toollessBin);
    symlinkSync(process.execPath, join(toollessBin, "node"));
    // Packed with the workspace's pnpm (workspace: ranges replaced), as published; the platform package holds
    // the workspace's source build (its prepack runs the contract suite on it; the Zig cross-builds are
    // `npm run test:prebuilds`'s).
    const [pnpmProgram, pnpmLead] = pnpmExecutable();
    managers.pnpm = pnpmLead[0] ?? pnpmProgram;
    const sourceBuild = join(
      packages,
      "metal-native",
      "native",
      "build",
      "Release",
      "nuvec_metal_native.node",
    );
    const prebuilt = existsSync(sourceBuild) ? { NUVEC_PREBUILD_FROM: sourceBuild } : {};
    for (const name of names)
      execFileSync(...pnpmArgs(["pack", "--pack-destination", tarballs]), {
        cwd: join(packages, name),
        stdio: "pipe",
        env: quietEnvironment({ ...process.env, ...prebuilt }),
      });
    expect(readdirSync(tarballs)).toHaveLength(names.length);
    managers.npm11 = onPath("npm");
    // npm 10 (the one Node 20 ships), fetched once like `npx -y npm@10` would. Installed from inside its own
    // folder, not with --prefix: npm derives its global config (where a machine's cafile or proxy may be set)
    // from the prefix, so --prefix would lose them on a machine with an empty npm cache.
    const npm10 = join(scratch, "npm10-program");
    mkdirSync(npm10);
    writeFileSync(join(npm10, "package.json"), JSON.stringify({ name: "npm10-program", private: true }));
    execFileSync(
      managerCommand(managers.npm11)[0],
      [...managerCommand(managers.npm11)[1], "install", "--no-audit", "--no-fund", "npm@10"],
      { cwd: npm10, stdio: "pipe" },
    );
    managers.npm10 = join(npm10, "node_modules", "npm", "bin", "npm-cli.js");
  }, COLD);

  it("the PATH of the installs has node and no compiler", () => {
    expect(readdirSync(toollessBin)).toEqual(["node"]);
    for (const tool of ["cc", "gcc", "c++", "g++", "clang", "make", "python3"])
      expect(spawnSync(tool, ["--version"], { env: toollessEnvironment() }).error).toBeDefined();
  });

  it.each(["npm10", "npm11", "pnpm"] as const)(
    "%s installs silently and the project uses the prebuilt host backend and the mock",
    (manager) => {
      const project = freshProject(manager, true);
      const output = install(manager, project);
      expectSilentAboutScripts(output);
      const version = execFileSync(...managerCommandArgs(manager, ["--version"]), {
        encoding: "utf8",
      }).trim();
      expect(version).toMatch(manager === "npm10" ? /^10\./ : manager === "npm11" ? /^11\./ : /^12\./);
      const results = use(project);
      expect(results).toMatchObject({
        native: "loaded",
        host: { platform: "host", active: 3072, byte: 7 },
        mock: { platform: "mock", active: 3072, byte: 7 },
      });
      // The addon came from the platform package: nothing was built, and no other copy is there.
      expect(String(results.addon)).toMatch(/@nuvec[/+]metal-native-linux-x64-gnu/);
      expect(realpathSync(String(results.addon)).startsWith(realpathSync(project))).toBe(true);
      const installed = realpathSync(join(project, "node_modules/@nuvec/metal-native"));
      expect(existsSync(join(installed, "native", "build"))).toBe(false);
      expect(readdirSync(installed)).not.toContain("binding.gyp");
      // CommonJS finds it too.
      const fromCommonJs = execFileSync(
        process.execPath,
        ["-e", 'console.log(require("@nuvec/metal-native").loadNativeBackend().platform)'],
        { cwd: project, env: toollessEnvironment(), encoding: "utf8" },
      );
      expect(fromCommonJs.trim()).toBe("host");
      // A broken local source build (tried first) does not hide the platform package.
      mkdirSync(join(installed, "native", "build", "Release"), { recursive: true });
      writeFileSync(join(installed, "native", "build", "Release", "nuvec_metal_native.node"), "not an addon");
      expect(use(project)).toMatchObject({ native: "loaded", host: { platform: "host" } });
      rmSync(join(installed, "native", "build"), { recursive: true });
      const device = JSON.parse(
        readFileSync(join(project, "node_modules/@nuvec/device/package.json"), "utf8"),
      );
      for (const range of Object.values(device.dependencies as Record<string, string>))
        expect(range).not.toMatch(/workspace:/);
    },
    COLD,
  );

  it(
    "with no package for the platform: installs silently, the mock works, loadNativeBackend says how to build",
    () => {
      const project = freshProject("no-platform-package", false);
      expectSilentAboutScripts(install("npm11", project));
      const before = use(project);
      expect(before.addon).toBeNull();
      expect(before.mock).toEqual({ platform: "mock", active: 3072, byte: 7 });
      expect(before.native).toMatchObject({
        unavailable: true,
        code: "ERR_NUVEC_NATIVE_UNAVAILABLE",
        reason: "not-installed",
      });
      const message = (before.native as { message: string }).message;
      expect(message).toContain("npm install @nuvec/metal-native-linux-x64-gnu@0.0.0");
      expect(message).toContain("npx @nuvec/metal-native build");
      // That command building the addon in an installed project (a second native build of the same sources)
      // is `npm run test:registry`'s, from a real registry.
    },
    COLD,
  );
});

function managerCommandArgs(manager: keyof Managers, args: string[]): [string, string[]] {
  const [program, lead] = managerCommand(managers[manager]);
  return [program, [...lead, ...args]];
}
