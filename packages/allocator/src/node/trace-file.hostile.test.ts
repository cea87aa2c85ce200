// Hostile traces, for every reader (the streaming ones too): traces that name ids wrongly are
// refused the same way by every reader; non-regular files (a FIFO, /dev/zero, a directory) are refused before
// anything is read; a gzip bomb of one endless line is refused with a typed error; a 36-million-event trace
// replays as a stream within 150 MiB of resident memory.
import { execFileSync, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createGzip, gzipSync } from "node:zlib";
import { FormatError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { badIdHistories } from "../../test/bad-traces.js";
import { readTrace, replayTraceFile, replayTraceStream, streamTrace } from "../node.js";
import { replayTrace } from "../replay.js";

const here = dirname(fileURLToPath(import.meta.url));
const { folder, write } = scratchFolder("nuvec-hostile-trace-");

async function* chunks(text: string) {
  yield Buffer.from(text);
}

/** The error `run` throws or rejects with. */
async function caught(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}

describe("hostile: impossible id histories are refused by every replay", () => {
  it.each(badIdHistories)(
    "%s: replayTrace, replayTraceFile and replayTraceStream agree",
    async (_name, events, why) => {
      const text = `${events.map((event) => JSON.stringify(event)).join("\n")}\n`;
      const errors = [
        await caught(() => replayTrace(events)),
        await caught(() => replayTraceFile(write("ids.ndjson", text))),
        await caught(() => replayTraceStream(chunks(text))),
        await caught(() => replayTraceStream(write("ids.ndjson.gz", gzipSync(text)))),
      ];
      for (const error of errors) {
        expect(error).toBeInstanceOf(FormatError);
        expect(error).toMatchObject({ code: "ERR_NUVEC_TRACE_EVENT", message: expect.stringMatching(why) });
      }
    },
  );
});

describe("hostile: files that are not regular files", () => {
  const readers: [string, (path: string) => unknown][] = [
    ["readTrace", (path) => readTrace(path)],
    ["replayTraceStream", (path) => replayTraceStream(path)],
    [
      "streamTrace",
      async (path) => {
        for await (const _ of streamTrace(path));
      },
    ],
  ];

  const fifo = join(folder, "trace.fifo");
  execFileSync("mkfifo", [fifo]);
  const targets: [string, string][] = [
    ["a FIFO (no writer: reading it would hang)", fifo],
    ["a directory", folder],
  ];
  // /dev/zero is endless: reading it grew to 7 GB before.
  if (existsSync("/dev/zero")) targets.push(["/dev/zero", "/dev/zero"]);

  for (const [reader, read] of readers) {
    it.each(targets)(`${reader} refuses %s with ERR_NUVEC_TRACE_NOT_A_FILE`, async (_name, path) => {
      const error = await caught(() => read(path));
      expect(error).toBeInstanceOf(FormatError);
      expect(error).toMatchObject({ code: "ERR_NUVEC_TRACE_NOT_A_FILE" });
    });
  }
});

describe("hostile: gzip bombs and endless lines", () => {
  /** A gzip file of `megabytes` MiB of one line with no end (a few KiB compressed). */
  async function oneLineBomb(name: string, megabytes: number): Promise<string> {
    const path = join(folder, name);
    const gzip = createGzip({ level: 9 });
    const done = new Promise<void>((resolveDone, reject) => {
      gzip
        .pipe(createWriteStream(path))
        .on("finish", () => resolveDone())
        .on("error", reject);
    });
    gzip.write('["a",0,1]\n');
    const block = Buffer.alloc(1024 * 1024, "a".charCodeAt(0));
    for (let index = 0; index < megabytes; index++) gzip.write(block);
    gzip.end();
    await done;
    return path;
  }

  it("a one-line gzip bomb is refused with ERR_NUVEC_TRACE_TOO_LARGE by every reader", async () => {
    const path = await oneLineBomb("bomb.ndjson.gz", 64);
    for (const read of [() => readTrace(path), () => replayTraceStream(path)]) {
      const error = await caught(read);
      expect(error).toBeInstanceOf(FormatError);
      expect(error).toMatchObject({
        code: "ERR_NUVEC_TRACE_TOO_LARGE",
        message: expect.stringMatching(/line 2/),
      });
    }
  });

  it("a long line from a plain stream is refused at the bound given", async () => {
    const error = await caught(() =>
      replayTraceStream(chunks(`["a",0,1]\n${" ".repeat(5000)}["f",0]\n`), { maxLineLength: 4096 }),
    );
    expect(error).toMatchObject({ code: "ERR_NUVEC_TRACE_TOO_LARGE" });
    await expect(
      replayTraceStream(chunks(`["a",0,1]\n${" ".repeat(4000)}["f",0]\n`), { maxLineLength: 4096 }),
    ).resolves.toMatchObject({ events: 2 });
  });
});

// A minute or more: run by `npm run test:long-traces` (CI runs it), skipped by the main suite.
describe.runIf(process.env.NUVEC_LONG_TRACES === "1")("hostile: a 36-million-event trace", () => {
  it("replays as a stream within 150 MiB of resident memory (peak RSS of its own process), figures exact", () => {
    // Written by the streaming generator (never held whole), then replayed from the file in a child.
    const path = join(folder, "long.ndjson");
    const generator = resolve(here, "../../bench/generate-trace.mjs");
    execFileSync(process.execPath, [generator, path, "36000000", "1000"], { encoding: "utf8" });
    try {
      const child = resolve(here, "../../test/children/stream-replay-rss.mjs");
      const run = spawnSync(process.execPath, [child, path], { encoding: "utf8" });
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      const result = JSON.parse(run.stdout.trim().split("\n").at(-1) as string);
      expect(result.events).toBe(36_000_000);
      // The generator's 1,000 live allocations at the end (the buffers they hold under the default policy),
      // and its peak (the same from 3.6 million events on).
      expect(result.active).toBe(541_470_720);
      expect(result.peakActive).toBe(550_725_632);
      expect(result.peakRssBytes).toBeLessThanOrEqual(150 * 1024 * 1024);
    } finally {
      rmSync(path, { force: true });
    }
  }, 900_000);
});
