#!/usr/bin/env node
// `pnpm release`: publishes the versions `pnpm version-packages` wrote, all or nothing up to the first
// publish. `changeset publish` packs and publishes every package in parallel, so one package's failed
// `prepack` (the native prebuild, say) could leave its dependents published against a version that never
// went out. Here every step that can fail runs for every package before anything is published:
//   1. refuses while changesets are pending (run `pnpm version-packages` first);
//   2. builds the workspace;
//   3. packs every published package with pnpm (runs its prepack; workspace: ranges become versions);
//   4. checks every tarball (scripts/check-package.mjs: metadata, LICENSE, source maps, publint, attw);
//   5. asks the registry which of these versions are already there (those are skipped, as changesets does);
//   6. publishes the packed tarballs with npm, dependencies before dependents, stopping at the first failure;
//   7. tags each published version `name@version` (push with `git push --follow-tags`).
// Packages whose binary this machine cannot build or run (darwin-arm64 off an Apple-silicon Mac; linux-arm64-gnu
// without qemu) are reported and left out (whyNotPackableHere). Before packing it runs `npm run test:prebuilds`.
// Options: --dry-run (everything but the publish and the tags: npm publish --dry-run), --tag <dist-tag>,
// --provenance and --otp=<code> (passed to npm publish), --skip-prebuilds-test (when test:prebuilds just
// passed on this commit, as in CI). See RELEASING.md.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { checkTarball, packPackage, publishedWorkspacePackages } from "./check-package.mjs";
import { pnpmArgs } from "./pnpm.mjs";
import { temporaryFolder } from "./temporary.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The order to publish workspace packages in: every package after the workspace packages it depends on
 * (dependencies, optional and peer dependencies). Ties keep name order; a cycle is an error.
 */
export function publishOrder(manifests) {
  const byName = new Map(manifests.map((manifest) => [manifest.name, manifest]));
  const order = [];
  const state = new Map();
  const visit = (name, path) => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") throw new Error(`dependency cycle: ${[...path, name].join(" -> ")}`);
    state.set(name, "visiting");
    const manifest = byName.get(name);
    const needs = {
      ...manifest.dependencies,
      ...manifest.optionalDependencies,
      ...manifest.peerDependencies,
    };
    for (const dependency of Object.keys(needs).sort()) {
      if (byName.has(dependency)) visit(dependency, [...path, name]);
    }
    state.set(name, "done");
    order.push(manifest);
  };
  for (const name of [...byName.keys()].sort()) visit(name, []);
  return order;
}

function fail(message) {
  console.error(`release: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

/** "published", "unpublished", or an Error when the registry could not say. */
function registryState(name, version) {
  const result = spawnSync("npm", ["view", `${name}@${version}`, "version", "--json"], {
    cwd: root,
    encoding: "utf8",
  });
  if (result.status === 0) return result.stdout.trim() === "" ? "unpublished" : "published";
  if (/E404|404 Not Found/.test(result.stderr)) return "unpublished";
  return new Error(
    result.stderr.trim().split("\n").slice(-3).join(" ") || `npm view exited ${result.status}`,
  );
}

/**
 * Why this machine cannot pack `manifest`'s package, or `undefined`: a platform package's prepack
 * (`node <script> <target>`) builds a binary its script's `whyNotHere(target)` can refuse.
 */
export async function whyNotPackableHere(manifest) {
  const prepack = /^node\s+(\S+)\s+(\S+)$/.exec(manifest.scripts?.prepack ?? "");
  if (!prepack) return undefined;
  const script = await import(pathToFileURL(join(manifest.folder, prepack[1])).href);
  return typeof script.whyNotHere === "function" ? script.whyNotHere(prepack[2]) : undefined;
}

async function main() {
  const { values } = parseArgs({
    options: {
      "dry-run": { type: "boolean", default: false },
      tag: { type: "string" },
      provenance: { type: "boolean", default: false },
      otp: { type: "string" },
      "skip-prebuilds-test": { type: "boolean", default: false },
    },
  });
  const dryRun = values["dry-run"];
  if (process.env.NUVEC_PREBUILD_FROM)
    fail("NUVEC_PREBUILD_FROM is set: a release packs only addons it built itself; unset it");

  // 1. Pending changesets mean the versions are not the ones to publish yet.
  const pending = readdirSync(join(root, ".changeset")).filter(
    (file) => file.endsWith(".md") && file !== "README.md",
  );
  if (pending.length > 0 && !dryRun)
    fail(
      `${pending.length} changesets are pending (${pending.join(", ")}): run pnpm version-packages and commit first`,
    );

  const manifests = publishedWorkspacePackages(root).map(({ folder, manifest }) => ({ folder, ...manifest }));
  // A package whose binary this machine cannot build or run (darwin-arm64 off an Apple-silicon Mac) is
  // reported and left out: it is packed and published where it can be (RELEASING.md).
  const skipped = [];
  const buildable = [];
  for (const manifest of manifests) {
    const why = await whyNotPackableHere(manifest);
    if (why === undefined) buildable.push(manifest);
    else {
      skipped.push(manifest);
      console.log(`release: ${manifest.name} cannot be packed here (${why}): skipped`);
    }
  }
  const order = publishOrder(buildable);

  // 2. Build.
  const [pnpm, pnpmPrefix] = pnpmArgs([]);
  if (run(pnpm, [...pnpmPrefix, "turbo", "run", "build", "--output-logs=errors-only"]) !== 0)
    fail("the build failed");

  // 2b. Every platform's prebuilt addon, cross-compiled and checked (npm run test:prebuilds), unless the caller
  // just ran it on this commit.
  if (!values["skip-prebuilds-test"]) {
    const prebuilds = run(process.execPath, [join(root, "scripts", "workspace.mjs"), "test:prebuilds"]);
    if (prebuilds !== 0) fail("the prebuilds' checks failed (npm run test:prebuilds)");
  }

  // 3. Pack every package: a failed prepack stops the release here, before anything is published.
  const temporary = temporaryFolder("nuvec-release-");
  const out = temporary.path;
  process.on("exit", () => temporary.remove());
  const tarballs = new Map();
  for (const manifest of order) {
    try {
      tarballs.set(manifest.name, packPackage(manifest.folder, out));
    } catch (error) {
      fail(
        `packing ${manifest.name} failed (nothing was published): ${error instanceof Error ? error.message : error}`,
      );
    }
  }

  // 4. Check every tarball.
  for (const manifest of order) {
    try {
      checkTarball(tarballs.get(manifest.name));
    } catch (error) {
      fail(`${manifest.name}'s tarball failed its checks (nothing was published): ${error.message}`);
    }
  }

  // 5. Which versions are new.
  const toPublish = [];
  for (const manifest of order) {
    const state = registryState(manifest.name, manifest.version);
    if (state instanceof Error) {
      if (!dryRun)
        fail(`could not ask the registry about ${manifest.name}@${manifest.version}: ${state.message}`);
      console.warn(`release: registry unreachable for ${manifest.name} (${state.message}); counted as new`);
    } else if (state === "published") {
      console.log(`release: ${manifest.name}@${manifest.version} is already published, skipped`);
      continue;
    }
    toPublish.push(manifest);
  }

  // 6. Publish, dependencies first; stop at the first failure.
  const flags = ["--access", "public"];
  if (values.tag) flags.push("--tag", values.tag);
  if (values.provenance) flags.push("--provenance");
  if (values.otp) flags.push(`--otp=${values.otp}`);
  if (dryRun) flags.push("--dry-run");
  const published = [];
  for (const manifest of toPublish) {
    console.log(`release: publishing ${manifest.name}@${manifest.version}${dryRun ? " (dry run)" : ""}`);
    if (run("npm", ["publish", tarballs.get(manifest.name), ...flags]) !== 0) {
      const done = published.map((item) => `${item.name}@${item.version}`).join(", ") || "nothing";
      const left = toPublish.slice(published.length).map((item) => item.name);
      fail(`publishing ${manifest.name} failed; published: ${done}; not published: ${left.join(", ")}`);
    }
    published.push(manifest);
  }

  // 7. Tags, as `changeset publish` makes them.
  if (!dryRun) {
    for (const manifest of published) run("git", ["tag", `${manifest.name}@${manifest.version}`]);
    if (published.length > 0) console.log("release: tagged; push with git push --follow-tags");
  }
  console.log(
    `release: ${published.length} packages ${dryRun ? "would be " : ""}published: ${published.map((item) => `${item.name}@${item.version}`).join(", ") || "none"}`,
  );
  if (skipped.length > 0)
    console.log(
      `release: not packed on this machine: ${skipped.map((item) => `${item.name}@${item.version}`).join(", ")} (see above)`,
    );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
