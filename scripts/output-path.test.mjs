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
  it("a folder that cannot be made, a file above, a directory, a FIFO: one error each, at once", () => {
    expect(refusal("/proc/self/nope/x.html")).toMatchObject({ code: "ENOENT" });
    const file = join(folder, "file");
    writeFileSync(file, "x");
    expect(refusal(join(file, "a", "b.html"))).toMatchObject({ code: "ENOTDIR" });
    expect(refusal(folder)).toMatchObject({ code: "EISDIR" });
    const fifo = join(folder, "fifo");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    expect(refusal(fifo)).toMatchObject({ code: "EINVAL" });
    expect(refusal(fifo).message).toBe(`--out ${fifo}: it is not a regular file, not a file to write`);
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
