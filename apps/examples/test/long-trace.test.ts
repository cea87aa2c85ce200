// The replay program on a 36-million-event trace: memory bounded by what the trace keeps live, not by its
// length (at most 150 MiB resident, the process's own peak), and the figures exact. The trace is written to
// a temporary file by the allocator's streaming generator, never held whole. From the built program.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { app, scratchFolder } from "./support.js";

const here = dirname(fileURLToPath(import.meta.url));
const allocator = dirname(createRequire(import.meta.url).resolve("@nuvec/allocator/package.json"));
const folder = scratchFolder("nuvec-examples-long-");

// A minute or more: run by `npm run test:long-traces` (CI runs it), skipped by the main suite.
describe.runIf(process.env.NUVEC_LONG_TRACES === "1")("replay of a 36-million-event trace", () => {
  it("stays within 150 MiB resident and gives the trace's exact figures", () => {
    const trace = join(folder, "long.ndjson");
    execFileSync(process.execPath, [
      join(allocator, "bench", "generate-trace.mjs"),
      trace,
      "36000000",
      "1000",
    ]);
    const rssFile = join(folder, "max-rss");
    const result = spawnSync(
      process.execPath,
      [
        "--import",
        pathToFileURL(join(here, "children", "report-max-rss.mjs")).href,
        join(app, "dist", "replay.js"),
        "--json",
        trace,
      ],
      { encoding: "utf8", env: { ...process.env, NUVEC_MAX_RSS_FILE: rssFile }, timeout: 600_000 },
    );
    rmSync(trace, { force: true });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const figures = JSON.parse(result.stdout);
    expect(figures).toMatchObject({
      events: 36_000_000,
      policy: "bounded",
      active: 541_470_720,
      peakActive: 550_725_632,
      reserved: 569_694_464,
      systemAllocations: 1047,
    });
    const maxRss = Number(readFileSync(rssFile, "utf8"));
    expect(maxRss).toBeLessThanOrEqual(150 * 1024 * 1024);
  }, 900_000);
});
