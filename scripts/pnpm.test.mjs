// Every script and test gets pnpm one way (scripts/pnpm.mjs): none spawns a bare `pnpm` (nor turbo,
// changeset or node-gyp), which fails on a machine with only Node.js and npm, or runs another version.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pnpmArgs, pnpmProgram, pnpmVersion, quietEnvironment } from "./pnpm.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const TOOLS = "pnpm|pnpx|turbo|changeset|node-gyp";
const CODE_RULES = [
  // spawn("pnpm", …), execFileSync('turbo', …)
  new RegExp(`\\b(?:spawn|spawnSync|execFile|execFileSync|fork)\\(\\s*["'\`](?:${TOOLS})["'\`]`),
  // exec("pnpm install"), execSync(`changeset version`)
  new RegExp(`\\b(?:exec|execSync)\\(\\s*["'\`](?:${TOOLS})\\b`),
  // a command as an array: ["pnpm", args], ["node-gyp", "rebuild"] (not the arguments of a pnpm helper:
  // runPnpm(["turbo", …]))
  new RegExp(`(?<!pnpm\\w*\\(\\s*)\\[\\s*["'\`](?:${TOOLS})["'\`]\\s*[,\\]]`, "i"),
  // looked up on PATH: onPath("pnpm"), which("pnpm")
  new RegExp(`\\b(?:onPath|which)\\(\\s*["'\`](?:${TOOLS})["'\`]`),
];
// A shell line (or a package.json script) that starts a command with a bare pnpm.
const SHELL_RULE = /(?:^|&&|\|\||;|\$\()\s*(?:pnpm|pnpx)\s/m;

/**
 * The lines of a file that spawn a bare pnpm, turbo, changeset or node-gyp: `[{ line, text }]`. `path` says
 * which rules apply (code, shell, package.json).
 */
function bareToolSpawns(path, text) {
  const found = [];
  if (path.endsWith("package.json")) {
    for (const [name, command] of Object.entries(JSON.parse(text).scripts ?? {}))
      if (SHELL_RULE.test(command)) found.push({ line: 0, text: `scripts.${name}: ${command}` });
    return found;
  }
  const shell = /\.(?:sh|bash)$/.test(path) || /^#!.*\b(?:ba)?sh\b/.test(text);
  const code = /\.(?:[cm]?[jt]s|tsx)$/.test(path);
  text.split("\n").forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed.startsWith("//") || trimmed.startsWith("*") || trimmed.startsWith("#")) return;
    const bare = shell ? SHELL_RULE.test(line) : code && CODE_RULES.some((rule) => rule.test(line));
    if (bare) found.push({ line: index + 1, text: trimmed });
  });
  return found;
}

describe("pnpm: one way to get it", () => {
  it("finds the bare spawns it looks for, and not the ones through the helper or npx", () => {
    const bad = [
      'spawnSync("pnpm", ["install"]);',
      "execFileSync('turbo', ['run', 'build']);",
      'exec("pnpm install --frozen-lockfile");',
      "execSync(`changeset version`);",
      'return ["pnpm", args];',
      'const nodeGyp = ["node-gyp", "rebuild"];',
      'const entry = onPath("pnpm");',
    ];
    for (const line of bad) expect(bareToolSpawns("x.mjs", line), line).toHaveLength(1);
    const good = [
      'runPnpm(["install", "--frozen-lockfile"]);',
      'pnpmRun(["turbo", "run", "build"]);',
      "execFileSync(...pnpmArgs(['pack']));",
      'spawnSync("npx", ["--yes", "pnpm@12.4.2", "install"]);',
      'it.each(["npm10", "npm11", "pnpm"])("%s installs", () => {});',
      '// spawnSync("pnpm") in a comment',
      'const manager = "pnpm";',
    ];
    for (const line of good) expect(bareToolSpawns("x.ts", line), line).toEqual([]);
    expect(bareToolSpawns("run.sh", "set -e\npnpm install\n")).toEqual([{ line: 2, text: "pnpm install" }]);
    expect(bareToolSpawns("run.sh", "npx --yes pnpm@12.4.2 install\n")).toEqual([]);
    expect(
      bareToolSpawns(
        "package.json",
        JSON.stringify({ scripts: { a: "tsup && pnpm pack", b: "vitest run" } }),
      ),
    ).toEqual([{ line: 0, text: "scripts.a: tsup && pnpm pack" }]);
  });

  it("no tracked file in scripts/, apps/ or packages/ spawns a bare pnpm, turbo, changeset or node-gyp", () => {
    const files = execFileSync("git", ["ls-files", "scripts", "apps", "packages"], {
      cwd: root,
      encoding: "utf8",
    })
      .split("\n")
      .filter((file) => file && !file.endsWith(".md") && file !== "scripts/pnpm.mjs")
      .filter((file) => /\.(?:[cm]?[jt]s|tsx|sh|bash)$|(?:^|\/)package\.json$/.test(file));
    expect(files.length).toBeGreaterThan(50);
    const problems = files.flatMap((file) =>
      bareToolSpawns(file, readFileSync(join(root, file), "utf8")).map(
        ({ line, text }) => `${file}:${line}: ${text}`,
      ),
    );
    expect(problems).toEqual([]);
  });

  it("runs the pinned version, found once", () => {
    expect(pnpmVersion).toMatch(/^\d+\.\d+\.\d+$/);
    const [program, args] = pnpmArgs(["--version"]);
    expect(pnpmProgram()).toBe(pnpmProgram());
    expect(execFileSync(program, args, { encoding: "utf8", env: quietEnvironment() }).trim()).toBe(
      pnpmVersion,
    );
  }, 120_000);

  it("keeps package managers' update notices out of the log", () => {
    expect(quietEnvironment({ PATH: "/bin" })).toMatchObject({
      PATH: "/bin",
      npm_config_update_notifier: "false",
    });
  });
});
