#!/usr/bin/env node
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
// How long the view of a long trace takes to draw: the built program writes the view of TRACE (default: a
// decode loop of 19,000 steps, 3.99 million events, from the allocator's generator), and headless Chromium
// opens it at 800, 1280 and 1920 pixels, three times each; printed are the file's size and, per width, the
// median milliseconds from navigation start to the script's start, the data decoded, the model built and the
// first draw's end (window.nuvecView). Run after the build:
//   node scripts/measure-first-draw.mjs [TRACE] [CHROMIUM]
import { temporaryFolder } from "../../../scripts/temporary.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = join(here, "..", "..");
const temporary = temporaryFolder("nuvec-view-timing-");
const folder = temporary.path;
const chromiumPath = process.argv[3] ?? "/usr/bin/chromium";
/** Runs `args` with node; throws with its stderr when it fails. */
function node(args) {
  const ran = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (ran.status !== 0) throw new Error(`${args.join(" ")} failed: ${ran.stderr}`);
  return ran.stdout;
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
try {
  let trace = process.argv[2];
  if (trace === undefined) {
    trace = join(folder, "decode.ndjson.gz");
    node([join(root, "packages", "allocator", "bench", "generate-decode-trace.mjs"), trace, "19000", "7"]);
  }
  const html = join(folder, "view.html");
  node([join(here, "dist", "cli.js"), trace, "--html", html]);
  console.log(
    `view: ${(statSync(html).size / 1e6).toFixed(1)} MB; ${cpus().length} cores, ${cpus()[0]?.model}`,
  );
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--no-first-run",
    ],
  });
  try {
    for (const width of [800, 1280, 1920]) {
      const runs = [];
      for (let run = 0; run < 3; run += 1) {
        const page = await browser.newPage({ viewport: { width, height: 900 } });
        await page.goto(`file://${html}`);
        await page.waitForFunction(() => window.nuvecView?.ready || window.nuvecView?.error, null, {
          timeout: 120_000,
        });
        runs.push(
          await page.evaluate(() => ({
            ...window.nuvecView.timings,
            firstDraw: window.nuvecView.firstDrawMs,
          })),
        );
        await page.close();
      }
      const of = (key) => Math.round(median(runs.map((one) => one[key])));
      console.log(
        `${width} px: script ${of("started")} ms, decoded ${of("decoded")} ms, built ${of("built")} ms, first draw ${of("firstDraw")} ms`,
      );
    }
  } finally {
    await browser.close();
  }
} finally {
  temporary.remove();
}
