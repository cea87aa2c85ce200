// The programs' output files: written whole into a temporary file beside the target, then renamed over it.
// The full file system itself (a file size limit) is test/hostile.test.ts's, through the programs.
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../test/support.js";
import { OutputPathError, writeOutputFile } from "./output-path.js";

const folder = scratchFolder("nuvec-output-");

describe("writeOutputFile", () => {
  it("writes a new file, and replaces one already there keeping its permissions", () => {
    const path = join(folder, "report.html");
    writeOutputFile(path, "first", "--html");
    expect(readFileSync(path, "utf8")).toBe("first");
    chmodSync(path, 0o640);
    writeOutputFile(path, Buffer.from("second"), "--html");
    expect([readFileSync(path, "utf8"), statSync(path).mode & 0o777]).toEqual(["second", 0o640]);
    expect(readdirSync(folder)).toEqual(["report.html"]);
  });

  it("writes through a symbolic link: the file it names is replaced, the link stays a link", () => {
    const real = join(folder, "linked", "real.html");
    mkdirSync(join(folder, "linked"));
    writeFileSync(real, "old");
    const link = join(folder, "link.html");
    symlinkSync(real, link);
    writeOutputFile(link, "new", "--html");
    expect([readFileSync(real, "utf8"), lstatSync(link).isSymbolicLink()]).toEqual(["new", true]);
    expect(readdirSync(join(folder, "linked"))).toEqual(["real.html"]);
  });

  it("on a failure (the rename refused) removes its temporary file and says which flag and path", () => {
    const inside = join(folder, "refused");
    // A directory that is not empty cannot be renamed over.
    mkdirSync(join(inside, "report.html"), { recursive: true });
    writeFileSync(join(inside, "report.html", "kept"), "kept");
    const path = join(inside, "report.html");
    let thrown: unknown;
    try {
      writeOutputFile(path, "new", "--report");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OutputPathError);
    expect((thrown as OutputPathError).code).toBe("EISDIR");
    // The temporary file: hidden, beside the target, named by the process and a random part.
    const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const temporary = `${escaped(join(inside, ".report.html."))}${process.pid}-[0-9a-z]{1,8}\\.partial`;
    expect((thrown as Error).message).toMatch(
      new RegExp(
        `^${escaped(`--report ${path}: cannot write it (EISDIR: illegal operation on a directory, rename '`)}${temporary}${escaped(`' -> '${path}')`)}$`,
      ),
    );
    expect(readdirSync(inside)).toEqual(["report.html"]);
    expect(readdirSync(path)).toEqual(["kept"]);
  });
});
