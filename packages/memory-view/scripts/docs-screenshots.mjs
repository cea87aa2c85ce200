#!/usr/bin/env node
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { readTrace } from "@nuvec/allocator/node";
// The README's screenshots: a shared trace (resnet50-train) with a checkpoint mapped at its start, a mark
// every few hundred events and a header as a Device writes it, replayed under every policy by the built
// program, its view opened in headless Chromium at three widths and saved to docs/. Run after the build:
//   node scripts/docs-screenshots.mjs [CHROMIUM]
import { temporaryFolder } from "../../../scripts/temporary.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = join(here, "..", "..");
const chromium = process.argv[2] ?? "/usr/bin/chromium";
const GiB = 1024 ** 3;
const temporary = temporaryFolder("nuvec-view-docs-");
const folder = temporary.path;
try {
  const { events } = readTrace(join(root, "fixtures", "traces", "resnet50-train.ndjson.gz"));
  const header = {
    name: "resnet50-train, marked",
    workload: "ResNet-50 fp32 training, batch 32, 3 SGD steps, a 1.25 GiB checkpoint mapped first",
    device: "24 GiB unified memory",
    allocator: {
      policy: "bounded",
      reserveRatio: 1.2,
      boundedRelease: "fitting",
      workingSet: 16 * GiB,
      memorySize: 24 * GiB,
      maxBufferLength: 16 * GiB,
      resourceLimit: 499_000,
      pageSize: 16384,
      memoryLimit: 22 * GiB,
      cacheLimit: 22 * GiB,
      fresh: true,
    },
  };
  const lines = [header, ["m", 1_000_000, 1.25 * GiB]];
  const every = Math.ceil(events.length / 24);
  events.forEach((event, index) => {
    if (index % every === 0) lines.push(["k", `step ${index / every}`]);
    lines.push(event);
  });
  lines.push(["u", 1_000_000]);
  const trace = join(folder, "marked.ndjson.gz");
  writeFileSync(trace, gzipSync(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`));
  const html = join(folder, "view.html");
  const ran = spawnSync(
    process.execPath,
    [join(here, "dist", "cli.js"), trace, "--policies", "all", "--html", html],
    {
      encoding: "utf8",
    },
  );
  process.stdout.write(ran.stdout);
  if (ran.status !== 0) throw new Error(`the program failed: ${ran.stderr}`);
  for (const width of [800, 1280, 1920]) {
    const target = join(here, "docs", `memory-view-${width}.png`);
    const shot = spawnSync(
      chromium,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        `--window-size=${width},${width < 1000 ? 780 : 700}`,
        "--virtual-time-budget=8000",
        `--screenshot=${target}`,
        `file://${html}`,
      ],
      { encoding: "utf8" },
    );
    if (shot.status !== 0) throw new Error(`chromium failed: ${shot.stderr}`);
    console.log(`wrote ${target}`);
  }
} finally {
  temporary.remove();
}
