#!/usr/bin/env node
// Measures the memory view on a long trace: the report's size, and how long Chromium takes from navigation
// to the end of the first draw (the page's own `nuvecView.firstDrawMs`), median of RUNS fresh pages. Needs
// the built programs and Debian's chromium:
//   node apps/examples/scripts/measure-view.mjs [TRACE] [TIMES] [RUNS]
// (default: fixtures/traces/gpt2-generate.ndjson.gz 4 times over, 542,222 events; 5 runs).
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { temporaryFolder } from "../../../scripts/temporary.mjs";
import { chromiumExecutable, launchChromium } from "./chromium.mjs";

const app = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const [
  trace = join(app, "..", "..", "fixtures", "traces", "gpt2-generate.ndjson.gz"),
  times = "4",
  runs = "5",
] = process.argv.slice(2);
const executable = chromiumExecutable;
if (executable === undefined) {
  console.error("measure-view: no chromium (apt-get install -y --no-install-recommends chromium)");
  process.exit(2);
}
const temporary = temporaryFolder("nuvec-measure-");
const folder = temporary.path;
try {
  const long = join(folder, "long.ndjson.gz");
  const made = spawnSync(process.execPath, [join(app, "scripts", "repeat-trace.mjs"), trace, times, long], {
    encoding: "utf8",
  });
  if (made.status !== 0) throw new Error(made.stderr);
  const { events } = JSON.parse(made.stdout);
  const html = join(folder, "view.html");
  const started = performance.now();
  const replay = spawnSync(
    process.execPath,
    [join(app, "dist", "replay.js"), long, "--compare", "all", "--html", html],
    {
      encoding: "utf8",
    },
  );
  if (replay.status !== 0) throw new Error(replay.stderr);
  const writeMs = performance.now() - started;
  const browser = await launchChromium(executable);
  const draws = [];
  for (let run = 0; run < Number(runs); run += 1) {
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(`file://${html}`);
    await page.waitForFunction(
      () => window.nuvecView?.ready === true || window.nuvecView?.error !== undefined,
      undefined,
      {
        timeout: 60_000,
      },
    );
    draws.push(
      await page.evaluate(() => ({ drawn: window.nuvecView.firstDrawMs, ...window.nuvecView.timings })),
    );
    await page.close();
  }
  await browser.close();
  draws.sort((a, b) => a.drawn - b.drawn);
  const median = draws[Math.floor(draws.length / 2)];
  const round = (value) => Math.round(value);
  console.log(
    JSON.stringify({
      events,
      reportBytes: statSync(html).size,
      replayAndWriteMs: Math.round(writeMs),
      // Milliseconds after navigation: the median run's script start (the HTML parsed), data decoded, model
      // built, first draw done; and the fastest and slowest first draws.
      medianRun: {
        scriptStarted: round(median.started),
        decoded: round(median.decoded),
        built: round(median.built),
        drawn: round(median.drawn),
      },
      firstDrawMs: { min: round(draws[0].drawn), max: round(draws.at(-1).drawn) },
      machine: `${cpus().length} × ${cpus()[0]?.model ?? "?"}`,
      chromium: spawnSync(executable, ["--version"], { encoding: "utf8" }).stdout.trim(),
    }),
  );
} finally {
  temporary.remove();
}
