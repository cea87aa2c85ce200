// Output paths checked before any work (scripts/output-path.mjs): each way a path cannot be written is one
// error at once, and the scripts that take one fail on it before they read anything.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { OutputPathError, prepareOutputPath } from "./output-path.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const folder = mkdtempSync(join(tmpdir(), "nuvec-output-path-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The error `prepareOutputPath(path)` throws. */
function refusal(path) {
  try {
    prepareOutputPath(path, "--out");
  } catch (error) {
    expect(error).toBeInstanceOf(OutputPathError);
    return error;
  }
  throw new Error(`${path} was accepted`);
}

describe("prepareOutputPath", () => {
  const file = join(folder, "file");
  writeFileSync(file, "x");
  const fifo = join(folder, "fifo");
  spawnSync("mkfifo", [fifo]);
  it.each([
    [
      "a folder that cannot be made (/proc)",
      "/proc/self/nope/x.html",
      "ENOENT",
      /^cannot make the folder \/proc\/self\/nope \(ENOENT: .*\)$/,
    ],
    [
      "a folder above that is a file",
      join(file, "a", "b.html"),
      "ENOTDIR",
      /^\/\S+\/file is not a directory$/,
    ],
    ["/dev/null's folder as a file", "/dev/null/x.html", "ENOTDIR", /^\/dev\/null is not a directory$/],
    ["a directory", folder, "EISDIR", /^it is a directory, not a file to write$/],
    [
      "a FIFO (never opened: it would block)",
      fifo,
      "EINVAL",
      /^it is not a regular file, not a file to write$/,
    ],
  ])("%s: one error, at once", (_label, path, code, message) => {
    const error = refusal(path);
    expect(error.code).toBe(code);
    expect(error.message.startsWith(`--out ${path}: `), error.message).toBe(true);
    expect(error.message.slice(`--out ${path}: `.length)).toMatch(message);
  });

  it("makes the missing folders of a path that can be written, and accepts an existing file", () => {
    const nested = join(folder, "a", "b", "c.txt");
    expect(prepareOutputPath(nested, "--out")).toBe(nested);
    expect(existsSync(dirname(nested))).toBe(true);
    writeFileSync(nested, "x");
    expect(prepareOutputPath(nested, "--out")).toBe(nested);
  });

  it.each(["cut-trace.mjs", "repeat-trace.mjs"])(
    "apps/examples/scripts/%s refuses a bad TARGET first",
    (script) => {
      const result = spawnSync(
        process.execPath,
        [
          join(root, "apps", "examples", "scripts", script),
          join(folder, "missing.gz"),
          "2",
          "/proc/self/nope/x.gz",
        ],
        { encoding: "utf8", timeout: 30_000 },
      );
      expect(result.status).toBe(2);
      expect(result.stderr.trim()).toMatch(
        /^TARGET \/proc\/self\/nope\/x.gz: cannot make the folder .*\(ENOENT\)$/,
      );
    },
  );
});
