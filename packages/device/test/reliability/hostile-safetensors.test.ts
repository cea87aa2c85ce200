// Hostile use of the safetensors reader and writer, each probe in a child process: a checkpoint truncated and
// rewritten in place while it is mapped (a read through the mapping would die of SIGBUS), and a checkpoint
// written past the file size limit (a partial file must not be left behind).
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import {
  childUnavailableReason,
  deviceBuilt,
  packageDirectory,
  runChild,
  sectionFigures,
} from "./support.js";

const skipReason = childUnavailableReason();
const figures = sectionFigures("hostile-safetensors", {} as Record<string, unknown>);
const scratch = scratchFolder("nuvec-hostile-safetensors-");

describe.skipIf(skipReason !== undefined)(
  `hostile use of mapSafetensors on the host backend${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    it("a checkpoint truncated and rewritten in place in a loop while it is mapped: never a signal, each map and readTensor a FormatError or the checkpoint", () => {
      const path = join(scratch.folder, "rewritten.safetensors");
      const { status, signal, stderr, report } = runChild("safetensors-truncate.mjs", {
        args: [path, "1500"],
        timeout: 60_000,
      });
      expect(signal).toBeNull();
      expect(stderr).toBe("");
      expect(status).toBe(0);
      const outcome = report as {
        mapped: number;
        copied: number;
        formatErrors: number;
        others: string[];
        fields: string[];
        mappedAfter: number;
      };
      expect(outcome.others).toEqual([]);
      expect(outcome.mappedAfter).toBe(0);
      expect(outcome.mapped + outcome.formatErrors).toBeGreaterThan(100);
      // The file changed under the reader, or was caught truncated: nothing else goes wrong.
      for (const field of outcome.fields) expect(["file", "header_length", "data_offsets"]).toContain(field);
      figures.rewrittenWhileMapped = `${outcome.mapped} maps read the checkpoint (${outcome.copied} copies of a tensor with readTensor), ${outcome.formatErrors} maps or copies were refused with a FormatError (${outcome.fields.join(", ")}), no signal`;
    }, 90_000);
  },
);

const prlimit = spawnSync("prlimit", ["--version"]).status === 0;
const writerSkip = !deviceBuilt
  ? "packages/device/dist is not built (the child process imports @nuvec/device)"
  : prlimit
    ? undefined
    : "prlimit is missing";

describe.skipIf(writerSkip !== undefined)(
  `hostile use of writeSafetensors${writerSkip ? ` (skipped: ${writerSkip})` : ""}`,
  () => {
    it("past the file size limit (EFBIG): a SystemCallError, the old file unchanged, no temporary file left", () => {
      mkdirSync(join(scratch.folder, "limited"));
      const path = scratch.write("limited/model.safetensors", "the old checkpoint");
      const child = join(packageDirectory, "test/reliability/children/safetensors-write-limit.mjs");
      const result = spawnSync("prlimit", ["--fsize=65536:65536", process.execPath, child, path], {
        encoding: "utf8",
        cwd: packageDirectory,
        timeout: 60_000,
      });
      expect(result.signal).toBeNull();
      expect(result.stderr).toBe("");
      expect(result.status).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({
        error: { name: "SystemCallError", code: "ERR_NUVEC_SYSTEM", syscall: "write", errno: "EFBIG", path },
        unchanged: true,
        folder: ["model.safetensors"],
      });
    });
  },
);
