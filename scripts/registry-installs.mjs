// The users' side of the registry test (registry-test.mjs): the package managers tried, a fresh project for
// each with only node, npm and npx on PATH, the user's program and the memory view's program run there, and
// a platform with no prebuilt package built from source. Apart from the registry they install from.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { linkInto } from "./check-package.mjs";
import { run } from "./registry-common.mjs";

/** The package managers, each run through npx from the registry, and how a project is set up for it. */
export const MANAGERS = [
  {
    name: "npm 10",
    npx: ["npm@10"],
    install: ["install", "--no-audit", "--no-fund"],
    exec: ["exec", "--"],
    version: /^10\./,
  },
  {
    name: "npm 11",
    npx: ["npm@11"],
    install: ["install", "--no-audit", "--no-fund"],
    exec: ["exec", "--"],
    version: /^11\./,
  },
  { name: "pnpm 12", npx: ["pnpm@12"], install: ["install"], exec: ["exec"], version: /^12\./ },
  {
    name: "yarn 4 (node-modules)",
    npx: ["-p", "@yarnpkg/cli-dist@4", "yarn"],
    install: ["install"],
    exec: ["run"],
    version: /^4\./,
    linker: "node-modules",
  },
  {
    name: "yarn 4 (Plug'n'Play)",
    npx: ["-p", "@yarnpkg/cli-dist@4", "yarn"],
    install: ["install"],
    exec: ["run"],
    version: /^4\./,
    linker: "pnp",
  },
];

/** A small trace for the memory view's program: a header, a mark, allocations, a mapped file, frees. */
export const VIEW_TRACE = [
  { name: "registry-view" },
  ["k", "step 0"],
  ["a", 0, 4096],
  ["a", 1, 1048576],
  ["m", 2, 8388608],
  ["f", 0],
  ["u", 2],
  ["f", 1],
]
  .map((line) => JSON.stringify(line))
  .join("\n");

/**
 * Runs the installed `nuvec-memory-view` through the manager (its bin, found as the manager finds bins) on
 * VIEW_TRACE, writing the view and both exports: what a user of `npx @nuvec/memory-view` gets.
 */
function tryMemoryView(manager, { project, env, npx, bin }) {
  writeFileSync(join(project, "trace.ndjson"), `${VIEW_TRACE}\n`);
  const args = [
    "nuvec-memory-view",
    "trace.ndjson",
    "--policies",
    "all",
    "--html",
    "view.html",
    "--export-torch",
    "view.pickle",
    "--export-chrome",
    "view.json",
    "--json",
  ];
  const ran = run(join(bin, "npx"), [...npx, ...manager.exec, ...args], { cwd: project, env });
  const line = ran.output.trim().split("\n").at(-1) ?? "";
  let printed;
  try {
    printed = JSON.parse(line);
  } catch {
    return { ok: false, why: `nuvec-memory-view failed:\n${ran.output.trim().slice(-1500)}` };
  }
  const pickle = existsSync(join(project, "view.pickle"))
    ? readFileSync(join(project, "view.pickle"))
    : undefined;
  const html = existsSync(join(project, "view.html")) ? readFileSync(join(project, "view.html"), "utf8") : "";
  const ok =
    ran.status === 0 &&
    printed.events === 6 &&
    printed.marks === 1 &&
    pickle?.[0] === 0x80 &&
    html.includes("window.uPlot") &&
    JSON.parse(readFileSync(join(project, "view.json"), "utf8")).traceEvents.length > 2;
  return { ok, why: ok ? undefined : `nuvec-memory-view: unexpected output ${line.slice(0, 400)}` };
}

/** The user's program: opens the real device, writes a buffer, reads it back, closes. */
export const USE_SCRIPT = `import { Device } from "@nuvec/device";
const device = Device.open();
const buffer = device.malloc(4096);
const bytes = buffer.bytes();
for (let index = 0; index < bytes.length; index += 1) bytes[index] = index % 251;
let same = 0;
for (let index = 0; index < bytes.length; index += 1) if (buffer.bytes()[index] === index % 251) same += 1;
const result = { platform: device.info().platform, active: device.memoryStats().active, readBack: same };
buffer.free();
device.close();
console.log(JSON.stringify(result));
`;

export function toollessBin(folder) {
  // npx: the npx-cli.js beside the npm that is found.
  const npm = run("sh", ["-c", 'realpath "$(command -v npm)"']).output.trim();
  const npx = join(dirname(npm), "npx-cli.js");
  return linkInto(folder, { node: process.execPath, sh: "/bin/sh", npm, npx });
}

/**
 * Installs @nuvec/device@version (and @nuvec/memory-view@viewVersion) with one manager into a fresh project
 * and runs the user's program and the memory view's program there.
 */
export function tryManager(manager, { scratch, url, version, viewVersion, bin }) {
  const slug = manager.name
    .replace(/[^a-z0-9]+/gi, "-")
    .replace(/-+$/, "")
    .toLowerCase();
  const project = join(scratch, "projects", slug);
  const home = join(scratch, "homes", slug);
  mkdirSync(project, { recursive: true });
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(project, "package.json"),
    `${JSON.stringify({ name: `user-${slug}`, private: true, type: "module", dependencies: { "@nuvec/device": version, "@nuvec/memory-view": viewVersion } }, null, 2)}\n`,
  );
  writeFileSync(join(project, ".npmrc"), `registry=${url}\nupdate-notifier=false\n`);
  writeFileSync(join(project, "use.mjs"), USE_SCRIPT);
  // pnpm 12 and yarn 4 hold back versions published less than a day ago (pnpm's minimumReleaseAge, yarn's
  // npmMinimalAgeGate): these are minutes old, so @nuvec/* is exempted, as the root README tells users to do
  // on a release's first day. Every other package keeps the gate.
  if (manager.npx[0] === "pnpm@12")
    writeFileSync(
      join(project, "pnpm-workspace.yaml"),
      'minimumReleaseAgeExclude:\n  - "@nuvec/*"\nupdateNotifier: false\n',
    );
  if (manager.linker)
    writeFileSync(
      join(project, ".yarnrc.yml"),
      [
        `npmRegistryServer: "${url}"`,
        'unsafeHttpWhitelist: ["127.0.0.1"]',
        `nodeLinker: ${manager.linker}`,
        "enableTelemetry: false",
        "enableGlobalCache: false",
        'npmPreapprovedPackages: ["@nuvec/*"]',
        "",
      ].join("\n"),
    );
  const env = {
    HOME: home,
    PATH: bin,
    npm_config_cache: join(home, ".npm"),
    npm_config_registry: url,
    // yarn refuses to write a lockfile where CI is set (immutable installs); a user's first install writes one.
    YARN_ENABLE_IMMUTABLE_INSTALLS: "false",
    TMPDIR: tmpdir(),
    LANG: "C.UTF-8",
  };
  const npx = ["--yes", `--registry=${url}`, ...manager.npx];
  const versionRun = run(join(bin, "npx"), [...npx, "--version"], { cwd: project, env });
  const toolVersion = versionRun.output.trim().split("\n").at(-1);
  if (versionRun.status !== 0 || !manager.version.test(toolVersion))
    return {
      ok: false,
      why: `npx ${manager.npx.join(" ")} --version: ${versionRun.output.trim().slice(-400)}`,
    };
  const installed = run(join(bin, "npx"), [...npx, ...manager.install], { cwd: project, env });
  if (installed.status !== 0)
    return { ok: false, tool: toolVersion, why: `install failed:\n${installed.output.trim().slice(-1500)}` };
  if (/node-gyp|gyp info|must be built/i.test(installed.output))
    return {
      ok: false,
      tool: toolVersion,
      why: `the install built something:\n${installed.output.slice(-1500)}`,
    };
  const program =
    manager.linker === "pnp"
      ? [join(bin, "npx"), [...npx, "node", "use.mjs"]]
      : [join(bin, "node"), ["use.mjs"]];
  const used = run(program[0], program[1], { cwd: project, env });
  const line = used.output.trim().split("\n").at(-1) ?? "";
  let result;
  try {
    result = JSON.parse(line);
  } catch {
    return { ok: false, tool: toolVersion, why: `the program failed:\n${used.output.trim().slice(-1500)}` };
  }
  const ok =
    used.status === 0 && result.platform === "host" && result.active === 4096 && result.readBack === 4096;
  if (!ok) return { ok, tool: toolVersion, result, why: `unexpected result ${line}` };
  const view = tryMemoryView(manager, { project, env, npx, bin });
  return { ok: view.ok, tool: toolVersion, result, why: view.why };
}

/** Asks for the native backend: "loaded", or the NativeUnavailableError's reason and message. */
const PROBE_SCRIPT = `import { loadNativeBackend } from "@nuvec/metal-native";
try {
  loadNativeBackend();
  console.log(JSON.stringify({ native: "loaded" }));
} catch (error) {
  console.log(JSON.stringify({ native: error.name, reason: error.reason, message: error.message }));
}
`;

/**
 * A platform with no prebuilt package, played by npm 11 with --omit=optional: the install builds nothing, the
 * backend says how to build it, and that command (`npx @nuvec/metal-native build`, compilers on PATH now)
 * builds it, after which the device opens.
 */
export function tryBuildFromSource({ scratch, url, version, bin }) {
  const project = join(scratch, "projects", "no-platform-package");
  const home = join(scratch, "homes", "no-platform-package");
  mkdirSync(project, { recursive: true });
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(project, "package.json"),
    `${JSON.stringify({ name: "user-no-platform-package", private: true, type: "module", dependencies: { "@nuvec/device": version } }, null, 2)}\n`,
  );
  writeFileSync(join(project, ".npmrc"), `registry=${url}\nupdate-notifier=false\n`);
  writeFileSync(join(project, "use.mjs"), USE_SCRIPT);
  writeFileSync(join(project, "probe.mjs"), PROBE_SCRIPT);
  const env = {
    HOME: home,
    PATH: bin,
    npm_config_cache: join(home, ".npm"),
    npm_config_registry: url,
    LANG: "C.UTF-8",
  };
  const npx = [join(bin, "npx"), ["--yes", `--registry=${url}`, "npm@11"]];
  const installed = run(npx[0], [...npx[1], "install", "--no-audit", "--no-fund", "--omit=optional"], {
    cwd: project,
    env,
  });
  if (installed.status !== 0)
    return { ok: false, why: `install failed:\n${installed.output.trim().slice(-1500)}` };
  if (existsSync(join(project, "node_modules", "@nuvec", "metal-native-linux-x64-gnu")))
    return { ok: false, why: "--omit=optional installed the platform package" };
  const before = JSON.parse(
    run(join(bin, "node"), ["probe.mjs"], { cwd: project, env }).output.trim().split("\n").at(-1),
  );
  if (before.reason !== "not-installed" || !before.message.includes("npx @nuvec/metal-native build"))
    return { ok: false, why: `without the platform package: ${JSON.stringify(before)}` };
  // The documented command, with the machine's compilers on PATH: node-gyp is found when it runs (npm's own).
  const built = run("npm", ["exec", "--yes", "--", "@nuvec/metal-native", "build", "--quiet"], {
    cwd: project,
    env: { ...env, PATH: process.env.PATH },
  });
  if (built.status !== 0)
    return { ok: false, why: `npx @nuvec/metal-native build failed:\n${built.output.slice(-1500)}` };
  const used = run(join(bin, "node"), ["use.mjs"], { cwd: project, env });
  const result = JSON.parse(used.output.trim().split("\n").at(-1) ?? "{}");
  const ok = result.platform === "host" && result.readBack === 4096;
  return { ok, result, why: ok ? undefined : `after the build: ${used.output.trim().slice(-800)}` };
}
