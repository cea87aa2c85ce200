// Temporary folders removed on every way out (scripts/temporary.mjs), and every program of the repository
// that makes one going through it.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const base = mkdtempSync(join(tmpdir(), "nuvec-temporary-test-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Waits up to `seconds` for `condition`. */
async function waitFor(condition, seconds) {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

/** A child that makes a temporary folder under `parent`, writes a file in it, says so, then `then`. */
function child(parent, then) {
  const code = `
    import { writeFileSync } from "node:fs";
    import { temporaryFolder } from ${JSON.stringify(join(here, "temporary.mjs"))};
    const folder = temporaryFolder("nuvec-child-");
    writeFileSync(folder.path + "/file", "x".repeat(1 << 20));
    console.log(folder.path);
    ${then}`;
  return spawn(process.execPath, ["--input-type=module", "-e", code], {
    env: { ...process.env, TMPDIR: parent },
    stdio: ["ignore", "pipe", "inherit"],
  });
}

describe("temporaryFolder", () => {
  it.each(["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])(
    "the folder goes when the program dies of %s while working",
    async (signal) => {
      const parent = mkdtempSync(join(base, `${signal}-`));
      const program = child(parent, "for (;;) {}");
      const exited = new Promise((resolve) => program.once("exit", (_code, by) => resolve(by)));
      const printed = await new Promise((resolve) =>
        program.stdout.once("data", (data) => resolve(String(data))),
      );
      expect(existsSync(printed.trim())).toBe(true);
      program.kill(signal);
      expect(await exited).toBe(signal);
      expect(await waitFor(() => readdirSync(parent).length === 0, 10)).toBe(true);
    },
  );

  it("the folder goes when the program ends without removing it, or throws", async () => {
    for (const then of ["process.exitCode = 0;", "throw new Error('boom');", "process.exit(3);"]) {
      const parent = mkdtempSync(join(base, "end-"));
      const program = child(parent, then);
      await new Promise((resolve) => program.once("exit", resolve));
      expect(await waitFor(() => readdirSync(parent).length === 0, 10)).toBe(true);
    }
  });

  it("remove() removes it at once, twice is harmless, and the program is not kept alive by the guardian", () => {
    const parent = mkdtempSync(join(base, "remove-"));
    const code = `
      import { existsSync } from "node:fs";
      import { temporaryFolder } from ${JSON.stringify(join(here, "temporary.mjs"))};
      const folder = temporaryFolder("nuvec-child-");
      folder.remove();
      folder.remove();
      console.log(existsSync(folder.path));`;
    // Kept alive by the guardian, it would run into the timeout (status null).
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
      env: { ...process.env, TMPDIR: parent },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe("false");
  });
});

/** Every program file of the repository (scripts, apps, the packages' scripts), tests and their support left out. */
function programs() {
  const found = [];
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (["node_modules", "dist", "test"].includes(entry.name) || entry.name.startsWith(".")) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(mjs|ts)$/.test(entry.name) && !/\.test\.|\.d\.mts$/.test(entry.name)) found.push(path);
    }
  };
  walk(join(root, "scripts"));
  walk(join(root, "apps"));
  for (const name of readdirSync(join(root, "packages"))) {
    const scripts = join(root, "packages", name, "scripts");
    if (existsSync(scripts)) walk(scripts);
  }
  return found;
}

describe("every program that writes temporary files", () => {
  it("makes its folder with temporaryFolder (a bare mkdtemp only where the folder is kept on purpose)", () => {
    const bare = programs()
      .filter((file) => !file.endsWith(join("scripts", "temporary.mjs")))
      .filter((file) => {
        const text = readFileSync(file, "utf8");
        // A folder kept on request (--keep) may be made bare: the line says so.
        return text.split("\n").some((line) => /mkdtemp(Sync)?\(/.test(line) && !line.includes("keep"));
      })
      .map((file) => relative(root, file));
    expect(bare).toEqual([]);
  });
});
