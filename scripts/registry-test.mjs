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
// The registry and the publishing are in registry-server.mjs, the installs in registry-installs.mjs.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fail, log, VERDACCIO } from "./registry-common.mjs";
import { MANAGERS, toollessBin, tryBuildFromSource, tryManager } from "./registry-installs.mjs";
import { copyOfCheckout, publisherNpmrc, publishWithReleaseFlow, startRegistry } from "./registry-server.mjs";
import { scratchFolder } from "./temporary.mjs";

export { MANAGERS, USE_SCRIPT, VIEW_TRACE } from "./registry-installs.mjs";

const keep = process.argv.includes("--keep");

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
