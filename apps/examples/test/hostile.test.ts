// Hostile use of the command-line programs: traces the replay program must
// refuse as replayTrace does, files that are not files, hostile safetensors headers, a demo whose checkpoint
// cannot be written, and every line within an 80-column terminal. From the built programs (the test task
// builds first).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";

const app = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shippedTrace = join(app, "traces", "gpt2-decode-cut.ndjson.gz");
const folder = mkdtempSync(join(tmpdir(), "nuvec-examples-hostile-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function run(program: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, [join(app, "dist", `${program}.js`), ...args], {
    encoding: "utf8",
    env: { ...process.env, FORCE_COLOR: "0", ...env },
    // A blocking open of a FIFO would hang and /dev/zero grow without bound: never wait forever.
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Characters (code points) of the longest line, ANSI escapes removed, each redraw (`\r`) a line of its own. */
function longestLine(text: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the terminal's escape sequences
  const plain = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
  return Math.max(0, ...plain.split(/\r\n|\r|\n/).map((line) => [...line].length));
}

function traceFile(name: string, lines: unknown[]): string {
  const path = join(folder, name);
  writeFileSync(path, gzipSync(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`));
  return path;
}

describe("hostile: replay refuses what replayTrace refuses (one validation path)", () => {
  // Which histories are impossible is @nuvec/allocator's table, checked against every reader there
  // (test/bad-traces.ts): here, that the program reports the reader's refusal.
  it("a double free: one line on stderr, exit code 2", () => {
    const events = [
      ["a", 0, 10],
      ["f", 0],
      ["f", 0],
    ];
    const { status, stderr } = run("replay", [traceFile("bad-ids.ndjson.gz", events), "--json"]);
    expect(status).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/already freed/);
    expect(stderr).toContain("ERR_NUVEC_TRACE_EVENT");
  });

  it("refuses a FIFO, /dev/zero and a directory before reading (no hang, no growth)", () => {
    const fifo = join(folder, "trace.fifo");
    execFileSync("mkfifo", [fifo]);
    const targets = [fifo, folder, ...(existsSync("/dev/zero") ? ["/dev/zero"] : [])];
    for (const target of targets) {
      const { status, stderr } = run("replay", [target]);
      expect(status, target).toBe(2);
      expect(stderr).toContain("ERR_NUVEC_TRACE_NOT_A_FILE");
    }
  });
});

describe("hostile: safetensors headers (every refusal is @nuvec/device's, tested there)", () => {
  function file(header: unknown, dataBytes = 64): Buffer {
    const body = Buffer.from(JSON.stringify(header));
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(body.length));
    return Buffer.concat([prefix, body, Buffer.alloc(dataBytes)]);
  }
  const tensor = (offsets: unknown[], shape = [4]) => ({ dtype: "U8", shape, data_offsets: offsets });

  it("checkpoint reports an overlapping file in one line, exit code 2", () => {
    const path = join(folder, "overlap.safetensors");
    writeFileSync(path, file({ a: tensor([0, 4]), b: tensor([2, 6]) }));
    const { status, stderr } = run("checkpoint", [path]);
    expect(status).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/tensor b: .*ERR_NUVEC_SAFETENSORS/);
  });
});

describe("hostile: the demo's temporary checkpoint", () => {
  it("is removed when writing it fails (a 2 MiB file size limit)", () => {
    const temporary = join(folder, "demo-tmp");
    mkdirSync(temporary);
    // SIGXFSZ ignored, so the write fails with EFBIG instead of killing the process.
    const result = spawnSync(
      "sh",
      [
        "-c",
        `trap "" XFSZ; ulimit -f 2048; exec "${process.execPath}" "${join(app, "dist", "demo.js")}" --report "${join(folder, "r.html")}"`,
      ],
      { encoding: "utf8", env: { ...process.env, TMPDIR: temporary }, timeout: 120_000 },
    );
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/EFBIG|too large/i);
    expect(readdirSync(temporary)).toEqual([]);
  });
});

describe("the programs fit an 80-column terminal", () => {
  it("the demo, piped: short output, no line over 80 columns; --verbose adds the full tables", () => {
    const brief = run("demo", ["--checkpoint-size", "24MiB", "--report", join(folder, "d.html")]);
    expect(brief.status).toBe(0);
    expect(longestLine(brief.stdout)).toBeLessThanOrEqual(80);
    expect(brief.stdout).toContain("after wiring, what changed:");
    expect(brief.stdout).not.toContain("| memoryLimit");
    expect(brief.stdout.split("\n").length).toBeLessThan(64);
    const verbose = run("demo", [
      "--checkpoint-size",
      "24MiB",
      "--report",
      join(folder, "d.html"),
      "--verbose",
    ]);
    expect(verbose.status).toBe(0);
    expect(longestLine(verbose.stdout)).toBeLessThanOrEqual(80);
    expect(verbose.stdout).toContain("| after the workload");
    expect(verbose.stdout).toContain("| memoryLimit");
  });

  it("replay and checkpoint output and every --help fit 80 columns", () => {
    const replay = run("replay", [shippedTrace]);
    expect(replay.status).toBe(0);
    expect(longestLine(replay.stdout)).toBeLessThanOrEqual(80);
    for (const program of ["demo", "replay", "checkpoint"]) {
      const help = run(program, ["--help"]);
      expect(help.status).toBe(0);
      expect(longestLine(help.stdout)).toBeLessThanOrEqual(80);
      expect(help.stdout).toContain("--help");
      expect(help.stdout).toContain("(default");
    }
  });

  const scriptAvailable = spawnSync("script", ["--version"]).status === 0;
  // `script` (util-linux) gives the program a pseudo-terminal; without it there is no TTY to test.
  it.skipIf(!scriptAvailable)(
    "on a 50-column pseudo-terminal the progress lines fit, and replay shows progress only there",
    () => {
      const inTerminal = (command: string) =>
        spawnSync("script", ["-qc", `stty cols 50 rows 40; ${command}`, "/dev/null"], {
          encoding: "utf8",
          timeout: 120_000,
        }).stdout;
      const node = `"${process.execPath}"`;
      const demo = inTerminal(
        `${node} "${join(app, "dist", "demo.js")}" --checkpoint-size 24MiB --report "${join(folder, "t.html")}"`,
      );
      const redraws = demo.split("\r").filter((part) => part.includes("%"));
      expect(redraws.length).toBeGreaterThan(0);
      for (const redraw of redraws) expect(longestLine(redraw)).toBeLessThanOrEqual(49);
      const replay = inTerminal(`${node} "${join(app, "dist", "replay.js")}" "${shippedTrace}"`);
      expect(replay).toContain("%");
      for (const redraw of replay.split("\r").filter((part) => part.includes("%")))
        expect(longestLine(redraw)).toBeLessThanOrEqual(49);
      // Piped or --json: no progress at all.
      expect(run("replay", [shippedTrace]).stdout).not.toContain("%");
      expect(
        inTerminal(`${node} "${join(app, "dist", "replay.js")}" "${shippedTrace}" --json`),
      ).not.toContain("%]");
    },
  );
});

/** Waits up to `seconds` for `condition`, polling every 20 ms. */
async function waitFor(condition: () => boolean, seconds: number): Promise<boolean> {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

/** The processes whose command line names `text` (the demo's guardian names its folder). */
function processesNaming(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(text)) found.push(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

describe.runIf(process.platform === "linux")(
  "hostile: the demo killed while it works leaves no checkpoint behind (was: 256 MiB left on SIGINT, SIGTERM, SIGHUP)",
  () => {
    it.each(["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"] as const)(
      "%s while the checkpoint is being written: the temporary folder goes, and its guardian with it",
      async (signal) => {
        const temporary = mkdtempSync(join(folder, `demo-${signal}-`));
        const child = spawn(
          process.execPath,
          [
            join(app, "dist", "demo.js"),
            "--checkpoint-size",
            "2GiB",
            "--report",
            join(folder, `${signal}.html`),
          ],
          { env: { ...process.env, TMPDIR: temporary }, stdio: "ignore" },
        );
        const exited = new Promise<NodeJS.Signals | null>((resolve) =>
          child.once("exit", (_code, by) => resolve(by)),
        );
        // Killed once the checkpoint has begun: its folder exists and holds the file.
        const started = await waitFor(() => {
          const made = readdirSync(temporary);
          return made.length === 1 && readdirSync(join(temporary, made[0] as string)).length > 0;
        }, 30);
        expect(started).toBe(true);
        const made = join(temporary, readdirSync(temporary)[0] as string);
        child.kill(signal);
        expect(await exited).toBe(signal);
        expect(await waitFor(() => readdirSync(temporary).length === 0, 10)).toBe(true);
        expect(await waitFor(() => processesNaming(made).length === 0, 10)).toBe(true);
      },
      60_000,
    );
  },
);

describe("hostile: output paths that cannot be written fail at once, with one line (was: a hang under /proc)", () => {
  const regular = join(folder, "a-file");
  writeFileSync(regular, "x");
  const directory = join(folder, "a-directory");
  mkdirSync(directory, { recursive: true });
  const cases: [string, string, RegExp][] = [
    [
      "a folder that cannot be made (/proc)",
      "/proc/self/nope/x.html",
      /cannot make the folder \/proc\/self\/nope .*\(ENOENT\)$/,
    ],
    ["a folder above that is a file", join(regular, "sub", "x.html"), /is not a directory \(ENOTDIR\)$/],
    ["a directory", directory, /it is a directory, not a file to write \(EISDIR\)$/],
    ["/dev/null's folder as a file", "/dev/null/x.html", /\/dev\/null is not a directory \(ENOTDIR\)$/],
  ];

  it.each(cases)("replay --html to %s", (_label, path, message) => {
    const started = Date.now();
    const { status, stdout, stderr } = run("replay", [shippedTrace, "--html", path]);
    expect(status).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr.trim()).toMatch(message);
    expect(stderr).toContain(`--html ${path}`);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it.runIf(process.platform === "linux")(
    "replay --html to a FIFO: refused, never opened (would block)",
    () => {
      const fifo = join(folder, "out.fifo");
      expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
      const { status, stderr } = run("replay", [shippedTrace, "--html", fifo]);
      expect(status).toBe(2);
      expect(stderr).toMatch(/it is not a regular file, not a file to write \(EINVAL\)/);
    },
  );

  it("demo --report to a folder that cannot be made: refused before a checkpoint is written", () => {
    const temporary = mkdtempSync(join(folder, "demo-report-"));
    const { status, stdout, stderr } = run("demo", ["--report", "/proc/self/nope/r.html"], {
      TMPDIR: temporary,
    });
    expect(status).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim()).toMatch(/^demo: --report \/proc\/self\/nope\/r.html: cannot make the folder/);
    expect(readdirSync(temporary)).toEqual([]);
  });

  it("a missing folder that can be made is made (and the report written there)", () => {
    const nested = join(folder, "made", "for", "the", "report.html");
    const { status } = run("replay", [shippedTrace, "--html", nested]);
    expect(status).toBe(0);
    expect(existsSync(nested)).toBe(true);
  });
});

describe("hostile: names from a file are printed escaped and cut (was: escape sequences reached the terminal)", () => {
  const evil = `\u001b]0;owned\u0007\u001b[2J\u001b[31mred\r\u202eevil${"x".repeat(5000)}`;

  it("a trace's header name: no control character reaches stdout, no line past 80 columns", () => {
    const trace = traceFile("evil-name.ndjson.gz", [{ name: evil }, ["a", 0, 4096], ["f", 0]]);
    const { status, stdout } = run("replay", [trace]);
    expect(status).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters that must not be printed
    expect(stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
    expect(stdout).toContain("\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\r\\u{202e}evilxx");
    expect(longestLine(stdout)).toBeLessThanOrEqual(80);
    // --json keeps the name whole: JSON escapes it itself.
    const json = JSON.parse(run("replay", [trace, "--json"]).stdout);
    expect(json.trace).toBe(evil);
  });

  it("an error quoting a path: escaped, one line", () => {
    const { status, stderr } = run("replay", [join(folder, "missing\u001b[31m\nsecond line.ndjson.gz")]);
    expect(status).toBe(2);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters that must not be printed
    expect(stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("missing\\x1b[31m");
  });

  it("a safetensors tensor name, in the checkpoint program", () => {
    const header = JSON.stringify({ [evil]: { dtype: "F16", shape: [2], data_offsets: [0, 4] } });
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(header)));
    const file = join(folder, "evil.safetensors");
    writeFileSync(file, Buffer.concat([prefix, Buffer.from(header), Buffer.alloc(4)]));
    const { status, stdout } = run("checkpoint", [file]);
    expect(status).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters that must not be printed
    expect(stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
    expect(longestLine(stdout)).toBeLessThanOrEqual(80);
  });
});
