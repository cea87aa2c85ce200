#!/usr/bin/env node
// `npm run test:registry`: the packages as users get them, from a registry, with the package managers they have.
//   1. starts a real local registry: verdaccio 6.8.0 (its node-fetch held at 2.7.0, the version that works on
//      Node.js 20), installed once into node_modules/.cache/nuvec-registry-tools, not a workspace dependency:
//      its ~330 packages would otherwise be in every contributor's install and lockfile for this one job.
//      Everything but @nuvec/* is proxied from registry.npmjs.org;
//   2. publishes every package with the release flow (RELEASING.md): in a copy of this checkout (tracked and
//      untracked files; nothing here changes), `pnpm version-packages` turns the pending changesets into
//      versions, then `pnpm release` builds, packs (each platform package's prepack builds its addon and runs
//      the contract suite), checks and publishes. The platform packages this machine cannot pack (darwin-arm64
//      off a Mac) are published as placeholders without their addon, so that the registry holds every package
//      @nuvec/metal-native names, as the real one does; their os/cpu fields keep them off this machine;
//   3. installs @nuvec/device and @nuvec/memory-view from it into a fresh project with npm 10, npm 11, pnpm 12
//      and yarn 4 (its node-modules linker and Plug'n'Play), each fetched through npx from that registry, with
//      only node, npm and npx on PATH (no compiler, no make, no python), an empty HOME and an empty cache;
//   4. opens the real device in each project: Device.open(), malloc, write, read back, close; then runs
//      `nuvec-memory-view` through the manager on a small trace (its view and both exports written);
//   5. a platform with no prebuilt package (npm 11, --omit=optional): nothing is built at install, the backend
//      names the build command, and `npx @nuvec/metal-native build` (compilers on PATH now) builds the addon.
// Prints one line per manager and exits 1 when one fails.
// Usage: node scripts/registry-test.mjs [--keep] [--reuse FOLDER] [--manager TEXT]   (--keep leaves the scratch
// folder and prints its path; --reuse runs the installs again against what a kept run published there;
// --manager runs only the managers whose name contains TEXT)
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { linkInto } from "./check-package.mjs";
import { quietEnvironment, runPnpm } from "./pnpm.mjs";
import { scratchFolder } from "./temporary.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const VERDACCIO = "6.8.0";
const NODE_FETCH = "2.7.0";
const tools = join(root, "node_modules", ".cache", "nuvec-registry-tools");
const keep = process.argv.includes("--keep");
const INSTALL_TIMEOUT_MS = 10 * 60_000;

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

function log(message) {
  console.log(`registry test: ${message}`);
}

function fail(message) {
  console.error(`registry test: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, {
    cwd: root,
    encoding: "utf8",
    timeout: INSTALL_TIMEOUT_MS,
    ...options,
    env: quietEnvironment(options.env ?? process.env),
  });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  return {
    status: result.error ? 1 : (result.status ?? 1),
    output: result.error ? String(result.error) : output,
  };
}

/** verdaccio's entry point, installed once into the tools folder. */
function verdaccio() {
  const entry = join(tools, "node_modules", "verdaccio", "bin", "verdaccio");
  if (existsSync(entry)) return entry;
  log(`installing verdaccio ${VERDACCIO} (node-fetch ${NODE_FETCH}) into ${tools}`);
  mkdirSync(tools, { recursive: true });
  writeFileSync(
    join(tools, "package.json"),
    `${JSON.stringify(
      {
        name: "nuvec-registry-tools",
        private: true,
        dependencies: { verdaccio: VERDACCIO },
        overrides: { "node-fetch": NODE_FETCH },
      },
      null,
      2,
    )}\n`,
  );
  const installed = run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: tools });
  if (installed.status !== 0 || !existsSync(entry)) fail(`installing verdaccio failed:\n${installed.output}`);
  return entry;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * The environment verdaccio reaches registry.npmjs.org with: where npm is configured with certificate
 * authorities of its own (`cafile`, as behind a proxy that signs with a private authority), Node.js must trust
 * them too, or every proxied package reads as missing.
 */
function uplinkEnvironment() {
  if (process.env.NODE_EXTRA_CA_CERTS) return process.env;
  const cafile = run("npm", ["config", "get", "cafile"]).output.trim();
  if (!cafile || cafile === "null" || cafile === "undefined" || !existsSync(cafile)) return process.env;
  return { ...process.env, NODE_EXTRA_CA_CERTS: cafile };
}

/** Starts verdaccio with its storage in `folder`; resolves with its URL and the child process once it answers. */
async function startRegistry(folder) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const config = join(folder, "config.yaml");
  writeFileSync(
    config,
    [
      `storage: ${join(folder, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${join(folder, "htpasswd")}`,
      "uplinks:",
      "  npmjs:",
      "    url: https://registry.npmjs.org/",
      "    timeout: 60s",
      "packages:",
      "  '@nuvec/*':",
      "    access: $all",
      "    publish: $authenticated",
      "  '**':",
      "    access: $all",
      "    publish: $authenticated",
      "    proxy: npmjs",
      "log: { type: stdout, format: pretty, level: error }",
      "",
    ].join("\n"),
  );
  const output = [];
  const child = spawn(process.execPath, [verdaccio(), "--config", config, "--listen", `127.0.0.1:${port}`], {
    stdio: ["ignore", "pipe", "pipe"],
    env: quietEnvironment(uplinkEnvironment()),
  });
  child.stdout.on("data", (chunk) => output.push(chunk));
  child.stderr.on("data", (chunk) => output.push(chunk));
  for (let attempt = 0; attempt < 120; attempt += 1) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}-/ping`)).ok) return { url, child, output };
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  child.kill();
  fail(`verdaccio did not start:\n${Buffer.concat(output).toString()}`);
}

/** Registers a user and returns an npmrc (registry and token) for publishing. */
async function publisherNpmrc(url, folder) {
  const response = await fetch(`${url}-/user/org.couchdb.user:nuvec`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "nuvec", password: "registry-test", type: "user", roles: [] }),
  });
  const body = await response.json();
  if (!response.ok || !body.token) fail(`could not register a publisher: ${JSON.stringify(body)}`);
  const npmrc = join(folder, "publisher.npmrc");
  const host = url.replace(/^https?:/, "");
  writeFileSync(npmrc, `registry=${url}\n${host}:_authToken=${body.token}\nupdate-notifier=false\n`);
  return npmrc;
}

/** A copy of this checkout's files (tracked and untracked, not ignored), as a git repository of its own. */
function copyOfCheckout(destination) {
  const listed = run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]);
  if (listed.status !== 0) fail(`git ls-files failed: ${listed.output}`);
  for (const file of listed.output.split("\0").filter(Boolean)) {
    const source = join(root, file);
    if (!existsSync(source)) continue; // deleted in the working tree
    mkdirSync(dirname(join(destination, file)), { recursive: true });
    cpSync(source, join(destination, file));
  }
  const git = (args) => run("git", args, { cwd: destination });
  git(["init", "-q"]);
  git(["add", "-A"]);
  git(["-c", "user.name=registry test", "-c", "user.email=registry-test@localhost", "commit", "-qm", "copy"]);
}

/** Publishes every package from `workspace` with the release flow; returns the versions published. */
function publishWithReleaseFlow(workspace, url, npmrc) {
  const pnpm = (args, env = {}) =>
    runPnpm(args, { cwd: workspace, env: { ...process.env, ...env }, stdio: "inherit" }).status;
  log("installing the copy's workspace (pnpm install --frozen-lockfile)");
  if (pnpm(["install", "--frozen-lockfile", "--prefer-offline"]) !== 0)
    fail("pnpm install failed in the copy");
  const pending = readdirSync(join(workspace, ".changeset")).filter(
    (file) => file.endsWith(".md") && file !== "README.md",
  );
  if (pending.length > 0) {
    log(`pnpm version-packages (${pending.length} pending changesets)`);
    if (pnpm(["version-packages"]) !== 0) fail("pnpm version-packages failed");
    if (pnpm(["install", "--no-frozen-lockfile", "--prefer-offline"]) !== 0)
      fail("pnpm install after versioning failed");
  }
  log(`pnpm release to ${url}`);
  const registryEnv = { npm_config_registry: url, npm_config_userconfig: npmrc };
  if (pnpm(["release", "--skip-prebuilds-test"], registryEnv) !== 0) fail("pnpm release failed");

  // The platform packages the release left out (see the header): placeholders, so the registry has every one.
  const placeholders = join(workspace, "..", "placeholders");
  mkdirSync(placeholders, { recursive: true });
  for (const name of readdirSync(join(workspace, "packages"))) {
    const folder = join(workspace, "packages", name);
    const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
    if (manifest.private || !manifest.os) continue;
    const view = run("npm", ["view", `${manifest.name}@${manifest.version}`, "version"], {
      env: registryEnv,
    });
    if (view.status === 0 && view.output.trim() !== "") continue;
    log(
      `${manifest.name}@${manifest.version} was not packed here: published as a placeholder without its addon`,
    );
    const packed = run("npm", ["pack", "--ignore-scripts", "--pack-destination", placeholders], {
      cwd: folder,
    });
    const tarball = readdirSync(placeholders).find((file) => file.includes(name) && file.endsWith(".tgz"));
    if (packed.status !== 0 || !tarball)
      fail(`packing the placeholder of ${manifest.name} failed: ${packed.output}`);
    const published = run("npm", ["publish", join(placeholders, tarball), "--access", "public"], {
      env: registryEnv,
    });
    if (published.status !== 0)
      fail(`publishing the placeholder of ${manifest.name} failed: ${published.output}`);
  }
  return JSON.parse(readFileSync(join(workspace, "packages", "device", "package.json"), "utf8")).version;
}

/**
 * A folder holding only node, npm, npx and sh (npx runs its command through sh): the PATH of the installs, no
 * compiler, make or python.
 */
function toollessBin(folder) {
  // npx: the npx-cli.js beside the npm that is found.
  const npm = run("sh", ["-c", 'realpath "$(command -v npm)"']).output.trim();
  const npx = join(dirname(npm), "npx-cli.js");
  return linkInto(folder, { node: process.execPath, sh: "/bin/sh", npm, npx });
}

/**
 * Installs @nuvec/device@version (and @nuvec/memory-view@viewVersion) with one manager into a fresh project
 * and runs the user's program and the memory view's program there.
 */
function tryManager(manager, { scratch, url, version, viewVersion, bin }) {
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
function tryBuildFromSource({ scratch, url, version, bin }) {
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

async function main() {
  // --reuse <folder>: the installs again, against what a kept run (--keep) published there.
  const reuseIndex = process.argv.indexOf("--reuse");
  const reused = reuseIndex >= 0 ? process.argv[reuseIndex + 1] : undefined;
  // Removed on every way out unless kept (--keep, --reuse).
  const made = reused === undefined ? scratchFolder("nuvec-registry-", keep, "registry test") : undefined;
  const scratch = reused ?? made.path;
  let registry;
  let failures = 0;
  try {
    registry = await startRegistry(scratch);
    log(`verdaccio ${VERDACCIO} at ${registry.url}`);
    const workspace = join(scratch, "workspace");
    let version;
    let viewVersion;
    const viewVersionOf = () =>
      JSON.parse(readFileSync(join(workspace, "packages", "memory-view", "package.json"), "utf8")).version;
    if (reused) {
      version = JSON.parse(
        readFileSync(join(workspace, "packages", "device", "package.json"), "utf8"),
      ).version;
      for (const folder of ["bin", "projects", "homes"])
        rmSync(join(scratch, folder), { recursive: true, force: true });
    } else {
      const npmrc = await publisherNpmrc(registry.url, scratch);
      copyOfCheckout(workspace);
      version = publishWithReleaseFlow(workspace, registry.url, npmrc);
    }
    viewVersion = viewVersionOf();
    const bin = toollessBin(join(scratch, "bin"));
    for (const tool of ["cc", "gcc", "c++", "g++", "clang", "make", "python3"])
      if (existsSync(join(bin, tool))) fail(`${tool} is on the installs' PATH`);
    log(`installing @nuvec/device@${version} with each package manager (PATH: node, npm, npx, sh)`);
    const lines = [];
    // --manager <text>: only the managers whose name contains it.
    const only = process.argv.includes("--manager")
      ? process.argv[process.argv.indexOf("--manager") + 1]
      : "";
    for (const manager of MANAGERS.filter((candidate) => candidate.name.includes(only ?? ""))) {
      const started = performance.now();
      const outcome = tryManager(manager, { scratch, url: registry.url, version, viewVersion, bin });
      const seconds = ((performance.now() - started) / 1000).toFixed(0);
      if (!outcome.ok) failures += 1;
      const detail = outcome.ok
        ? `opened the ${outcome.result.platform} device, wrote and read back ${outcome.result.readBack} bytes; nuvec-memory-view wrote its view and both exports`
        : outcome.why;
      lines.push(
        `  ${outcome.ok ? "ok  " : "FAIL"} ${manager.name} (${outcome.tool ?? "?"}, ${seconds} s): ${detail}`,
      );
      console.log(lines.at(-1));
    }
    if (!only || "no platform package".includes(only)) {
      const started = performance.now();
      const outcome = tryBuildFromSource({ scratch, url: registry.url, version, bin });
      const seconds = ((performance.now() - started) / 1000).toFixed(0);
      if (!outcome.ok) failures += 1;
      const detail = outcome.ok
        ? "NativeUnavailableError named the build command; npx @nuvec/metal-native build built it; the device opened"
        : outcome.why;
      lines.push(`  ${outcome.ok ? "ok  " : "FAIL"} npm 11, no platform package (${seconds} s): ${detail}`);
      console.log(lines.at(-1));
    }
    console.log(
      `\nregistry test: @nuvec/device@${version}, @nuvec/memory-view@${viewVersion} from ${registry.url}\n${lines.join("\n")}`,
    );
  } finally {
    registry?.child.kill();
    if (made) made.remove();
    else log(`kept ${scratch}`);
  }
  return failures > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = await main();
