#!/usr/bin/env node
// Checks that the package in the current folder is right once published: packs it as pnpm would publish
// it (workspace: ranges replaced), then runs publint and @arethetypeswrong/cli over the tarball.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const out = mkdtempSync(join(tmpdir(), "nuvec-pack-"));
const pnpm = process.env.npm_execpath;
function run(command, args) {
  execFileSync(command, args, { stdio: "inherit" });
}
try {
  // pnpm 12 may run as a single executable rather than a script: run it as what it is.
  if (pnpm && /pnpm/.test(pnpm) && /\.[cm]?js$/.test(pnpm))
    run(process.execPath, [pnpm, "pack", "--pack-destination", out]);
  else if (pnpm && /pnpm/.test(pnpm)) run(pnpm, ["pack", "--pack-destination", out]);
  else run("npm", ["pack", "--pack-destination", out]);
  const tarball = readdirSync(out).find((file) => file.endsWith(".tgz"));
  if (!tarball) throw new Error("no tarball was written");
  const path = join(out, tarball);
  run("publint", ["run", path, "--strict"]);
  const profile = process.argv.includes("--esm-only") ? ["--profile", "esm-only"] : [];
  run("attw", [path, "--format", "table-flipped", ...profile]);
} finally {
  rmSync(out, { recursive: true, force: true });
}
