// Hostile use of the command-line programs: what each program refuses (one line, exit code 2), files that are
// not files, a demo whose checkpoint cannot be written or that is killed while it writes, output paths that
// cannot be written, names with escape sequences, and every line within an 80-column terminal. From the built
// programs (the test task builds first).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  app,
  longestLine,
  run,
  safetensorsFile,
  scratchFolder,
  shippedTrace,
  traceFile,
  waitFor,
} from "./support.js";

const folder = scratchFolder("nuvec-examples-hostile-");

describe("hostile: what the programs refuse, one line on stderr, exit code 2", () => {
  // What the flags' parser refuses (an unknown flag, a size that is not one) is src/lib/arguments.test.ts's;
  // which histories are impossible is @nuvec/allocator's table (test/bad-traces.ts), and which safetensors
  // headers, @nuvec/device's: here, that each program reports the refusal.
  const garbage = join(folder, "garbage.ndjson.gz");
  writeFileSync(garbage, "this is not gzip");
  const evil = join(folder, "evil.pickle");
  writeFileSync(evil, Buffer.from("\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.", "latin1"));
  const doubleFree = traceFile(join(folder, "double-free.ndjson.gz"), [
    ["a", 0, 10],
    ["f", 0],
    ["f", 0],
  ]);
  const overlap = join(folder, "overlap.safetensors");
  const tensor = (offsets: number[]) => ({ dtype: "U8", shape: [4], data_offsets: offsets });
  safetensorsFile(overlap, { a: tensor([0, 4]), b: tensor([2, 6]) }, 64);
  // Files that are not files are refused before reading (no hang on the FIFO, no growth on /dev/zero).
  const fifo = join(folder, "trace.fifo");
  execFileSync("mkfifo", [fifo]);
  const notFiles = [fifo, folder, ...(existsSync("/dev/zero") ? ["/dev/zero"] : [])];

  it.each<[string, string[], RegExp]>([
    ["replay", ["--json"], /no TRACE/],
    ["replay", [shippedTrace, "--compare", "mlx,lru"], /--compare: "lru" is not a policy/],
    ["replay", [shippedTrace, "--compare", "mlx", "--policy", "mlx"], /give one/],
    ["replay", [shippedTrace, "--device", "0"], /PyTorch snapshots only/],
    ["replay", [shippedTrace, "--device", "x"], /--device/],
    ["replay", [join(folder, "missing.ndjson.gz")], /missing\.ndjson\.gz/],
    ["replay", [shippedTrace, "--policy", "lru"], /--policy/],
    ["replay", [shippedTrace, "--bounded-release", "biggest"], /--bounded-release/],
    ["replay", [garbage], /^replay: /],
    ["replay", [evil], /refused the global os\.system.*ERR_NUVEC_TRACE_CORRUPT/],
    ["replay", [doubleFree, "--json"], /already freed.*ERR_NUVEC_TRACE_EVENT/],
    ["demo", ["--checkpoint-size", "big"], /--checkpoint-size/],
    ["checkpoint", [join(folder, "nope.safetensors")], /nope\.safetensors/],
    ["kernel", ["--count", "-3"], /--count/],
    ["checkpoint", [overlap], /tensor b: .*ERR_NUVEC_SAFETENSORS/],
    ...notFiles.map((path): [string, string[], RegExp] => ["replay", [path], /ERR_NUVEC_TRACE_NOT_A_FILE/]),
  ])("%s %j", (program, args, message) => {
    const { status, stderr } = run(program, args);
    expect(status).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(message);
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
  it("replay and checkpoint output and every --help fit 80 columns; piped, no progress", () => {
    const replay = run("replay", [shippedTrace]);
    expect(replay.status).toBe(0);
    expect(longestLine(replay.stdout)).toBeLessThanOrEqual(80);
    // Piped: no progress at all.
    expect(replay.stdout).not.toContain("%");
    for (const program of ["demo", "replay", "checkpoint", "kernel", "decode"]) {
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
      const command = (program: string) => `"${process.execPath}" "${join(app, "dist", `${program}.js`)}"`;
      const progress = (text: string) => text.split("\r").filter((part) => part.includes("%"));
      const demo = progress(
        inTerminal(`${command("demo")} --checkpoint-size 24MiB --report "${folder}/t.html"`),
      );
      const replay = progress(inTerminal(`${command("replay")} "${shippedTrace}"`));
      expect([demo.length > 0, replay.length > 0]).toEqual([true, true]);
      for (const redraw of [...demo, ...replay]) expect(longestLine(redraw)).toBeLessThanOrEqual(49);
      // --json: no progress at all (piped, the test above).
      expect(inTerminal(`${command("replay")} "${shippedTrace}" --json`)).not.toContain("%]");
    },
  );
});

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
        const args = ["--checkpoint-size", "2GiB", "--report", join(folder, `${signal}.html`)];
        const child = spawn(process.execPath, [join(app, "dist", "demo.js"), ...args], {
          env: { ...process.env, TMPDIR: temporary },
          stdio: "ignore",
        });
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
  // Each way a path cannot be written (a file above, a directory, a FIFO…) is scripts/output-path.test.mjs's;
  // here, that the programs check it before any work and say so in one line.
  it("replay --html to a folder that cannot be made (/proc)", () => {
    const started = Date.now();
    const { status, stdout, stderr } = run("replay", [shippedTrace, "--html", "/proc/self/nope/x.html"]);
    expect(status).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr.trim()).toMatch(
      /^replay: --html \/proc\/self\/nope\/x.html: cannot make the folder \/proc\/self\/nope .*\(ENOENT\)$/,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
  });

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
});

describe("hostile: names from a file are printed escaped and cut (was: escape sequences reached the terminal)", () => {
  const evil = `\u001b]0;owned\u0007\u001b[2J\u001b[31mred\r\u202eevil${"x".repeat(5000)}`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters that must not be printed
  const unprintable = /[\u0000-\u0009\u000b-\u001f\u007f\u202e]/;

  it("a trace's header name: no control character reaches stdout, no line past 80 columns", () => {
    const trace = traceFile(join(folder, "evil-name.ndjson.gz"), [{ name: evil }, ["a", 0, 4096], ["f", 0]]);
    const { status, stdout } = run("replay", [trace]);
    expect(status).toBe(0);
    expect(stdout).not.toMatch(unprintable);
    expect(stdout).toContain("\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\r\\u{202e}evilxx");
    expect(longestLine(stdout)).toBeLessThanOrEqual(80);
    // --json keeps the name whole: JSON escapes it itself.
    const json = JSON.parse(run("replay", [trace, "--json"]).stdout);
    expect(json.trace).toBe(evil);
  });

  it("an error quoting a path: escaped, one line", () => {
    const { status, stderr } = run("replay", [join(folder, "missing\u001b[31m\nsecond line.ndjson.gz")]);
    expect(status).toBe(2);
    expect(stderr).not.toMatch(unprintable);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("missing\\x1b[31m");
  });

  it("a safetensors tensor name, in the checkpoint program", () => {
    const file = join(folder, "evil.safetensors");
    safetensorsFile(file, { [evil]: { dtype: "F16", shape: [2], data_offsets: [0, 4] } }, 4);
    const { status, stdout } = run("checkpoint", [file]);
    expect(status).toBe(0);
    expect(stdout).not.toMatch(unprintable);
    expect(longestLine(stdout)).toBeLessThanOrEqual(80);
  });
});

describe("hostile: PyTorch snapshots that would cost unbounded memory or time are refused in bounded both", () => {
  // Each through the replay program within 256 MiB of heap and a time limit: one FormatError line, exit 2.
  // The reader's own budgets, byte for byte, are @nuvec/memory-view's src/snapshot/snapshot-pickle.test.ts's.
  const proto = Buffer.from([0x80, 0x04]);
  const snapshot = (name: string, ...pieces: (string | Buffer)[]) => {
    const path = join(folder, name);
    const bytes = Buffer.concat(
      pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece, "latin1") : piece)),
    );
    writeFileSync(path, name.endsWith(".gz") ? gzipSync(bytes, { level: 9 }) : bytes);
    return path;
  };
  const long4 = Buffer.concat([Buffer.from([0x8b, 0, 0, 1, 0]), Buffer.alloc(65536, 1)]);
  const NOT_READABLE = "is not a readable PyTorch memory snapshot";
  const CORRUPT = "(ERR_NUVEC_TRACE_CORRUPT)";
  const hostile: [string, () => string, (compressedSize: number) => string][] = [
    [
      "thirty million EMPTY_DICTs in a 29 KiB gzip",
      () => snapshot("dicts.pickle.gz", proto, "}".repeat(3e7)),
      (size) =>
        `inflates to more than 16777216 bytes (${size} compressed; a snapshot inflates at most 64 times, or to 16777216 bytes) (ERR_NUVEC_TRACE_TOO_LARGE)`,
    ],
    [
      "thirty million EMPTY_DICTs, not gzipped",
      () => snapshot("dicts.pickle", proto, "}".repeat(3e7)),
      () => `${NOT_READABLE}: more than 65536 items on the stack at byte 65538 ${CORRUPT}`,
    ],
    [
      "two million empty dicts appended to a list (the memory budget)",
      () => snapshot("appended.pickle", proto, "]", "}a".repeat(2e6)),
      () =>
        `${NOT_READABLE}: more values than a snapshot of 4000003 bytes holds (over 129554504 bytes of memory: 24 a byte of pickle) at byte 1177769 ${CORRUPT}`,
    ],
    [
      "ten million MARKs",
      () => snapshot("marks.pickle", proto, "(".repeat(1e7)),
      () => `${NOT_READABLE}: more than 64 marks open at byte 66 ${CORRUPT}`,
    ],
    [
      "four million memo references in a gzip of 17 KiB",
      () => snapshot("memo.pickle.gz", proto, "]\x94(", "h\x00".repeat(4e6), "e."),
      () => `${NOT_READABLE}: more than 65536 items on the stack at byte 131075 ${CORRUPT}`,
    ],
    [
      "24 LONG4 integers of 64 KiB",
      () => snapshot("long4.pickle", proto, "](", ...Array.from({ length: 24 }, () => long4), "e."),
      () =>
        `${NOT_READABLE}: the opcode 0x8b (LONG4), which a memory snapshot never holds at byte 4 ${CORRUPT}`,
    ],
    [
      "a BUILD that sets a list's __proto__ to a dict",
      () => snapshot("proto.pickle", proto, "]}\x8c\x09__proto__}sb."),
      () =>
        `${NOT_READABLE}: the opcode 0x62 'b' (BUILD), which a memory snapshot never holds at byte 17 ${CORRUPT}`,
    ],
    [
      "a gzip that never ends (its stream cut off)",
      () => {
        const path = join(folder, "cut.pickle.gz");
        const whole = gzipSync(readFileSync(join(app, "traces", "toy-train.pickle")));
        writeFileSync(path, whole.subarray(0, whole.length >> 1));
        return path;
      },
      () => `${NOT_READABLE}: bad gzip data (unexpected end of file) ${CORRUPT}`,
    ],
  ];
  it.each(hostile)("%s", (_name, make, message) => {
    const path = make();
    const started = Date.now();
    const { status, stdout, stderr } = run("replay", [path, "--json"], {
      NODE_OPTIONS: "--max-old-space-size=256",
    });
    const seconds = (Date.now() - started) / 1000;
    expect([status, stdout, stderr]).toEqual([2, "", `replay: ${path} ${message(statSync(path).size)}\n`]);
    // The old reader took 54 s to reach the heap limit on the first; each is refused in about a second.
    expect(seconds).toBeLessThan(20);
  });

  it("a pickle larger than the heap can hold is refused at half the heap limit, not aborted by V8", () => {
    // Eight million empty dicts in a list: 16 MB, whose proportional budget (400 MiB) is past a 256 MiB heap.
    const path = snapshot("heap.pickle", proto, "]", "}a".repeat(8e6));
    const limit = Number(
      execFileSync(process.execPath, [
        "--max-old-space-size=256",
        "-p",
        "require('v8').getHeapStatistics().heap_size_limit",
      ]),
    );
    const { status, stderr } = run("replay", [path], { NODE_OPTIONS: "--max-old-space-size=256" });
    expect(status).toBe(2);
    expect(stderr).toMatch(
      new RegExp(
        `^replay: ${path} ${NOT_READABLE}: more values than this process can hold \\(over ${Math.floor(limit / 2)} bytes of memory: half its heap limit\\) at byte \\d+ \\(ERR_NUVEC_TRACE_CORRUPT\\)\n$`,
      ),
    );
  });

  it("an address past 2^53 is read whole and nothing but the program writes to stderr", () => {
    const text = (value: string) => `\x8c${String.fromCharCode(value.length)}${value}`;
    const address = Buffer.alloc(8);
    address.writeBigUInt64LE(2n ** 62n + 1n);
    const path = snapshot(
      "high-address.pickle",
      proto,
      `}(${text("device_traces")}]](}(${text("action")}${text("alloc")}${text("addr")}\x8a\x08`,
      address,
      `${text("size")}J\x00\x02\x00\x00ueau.`,
    );
    const { status, stdout, stderr } = run("replay", [path, "--json"]);
    expect([status, stderr]).toEqual([0, ""]);
    expect(JSON.parse(stdout)).toMatchObject({ events: 1, peakLive: 512, pytorch: { allocations: 1 } });
  });

  it("a FIFO and /dev/zero named as snapshots are refused before anything is read", () => {
    const fifo = join(folder, "snapshot-fifo.pickle");
    execFileSync("mkfifo", [fifo]);
    const zero = join(folder, "zero.pickle");
    symlinkSync("/dev/zero", zero);
    for (const path of [fifo, zero]) {
      const { status, stderr } = run("replay", [path]);
      expect([status, stderr]).toEqual([
        2,
        `replay: ${path} is not a regular file (ERR_NUVEC_TRACE_NOT_A_FILE)\n`,
      ]);
    }
  });
});

describe("hostile: an output file onto a full file system is written whole or not at all", () => {
  // A file size limit of 64 KiB (SIGXFSZ ignored, so the write fails with EFBIG) stands in for a full disk:
  // the report is larger. The report already there stays as it was, and no temporary file is left.
  const limited = (program: string, args: string[]) =>
    spawnSync(
      "sh",
      [
        "-c",
        `trap "" XFSZ; ulimit -f 64; exec "$@"`,
        "sh",
        process.execPath,
        join(app, "dist", `${program}.js`),
        ...args,
      ],
      { encoding: "utf8", env: { ...process.env, FORCE_COLOR: "0" }, timeout: 120_000 },
    );
  const previous = "the report of the last run\n";

  it("replay --html: one line, exit 2, the previous report intact", () => {
    const out = mkdtempSync(join(folder, "full-replay-"));
    const report = join(out, "report.html");
    writeFileSync(report, previous);
    const { status, stderr } = limited("replay", [shippedTrace, "--html", report]);
    expect([status, stderr]).toEqual([
      2,
      `replay: --html ${report}: cannot write it (EFBIG: file too large, write) (EFBIG)\n`,
    ]);
    expect(readFileSync(report, "utf8")).toBe(previous);
    expect(readdirSync(out)).toEqual(["report.html"]);
  });

  it("the demo's --report: one line, exit 2, no report and no temporary file", () => {
    const out = mkdtempSync(join(folder, "full-demo-"));
    const checkpoint = join(folder, "full-demo.safetensors");
    safetensorsFile(checkpoint, { w: { dtype: "F16", shape: [1024], data_offsets: [0, 2048] } }, 2048);
    const report = join(out, "demo.html");
    const { status, stderr } = limited("demo", ["--checkpoint", checkpoint, "--report", report]);
    expect([status, stderr]).toEqual([
      2,
      `demo: --report ${report}: cannot write it (EFBIG: file too large, write) (EFBIG)\n`,
    ]);
    expect(readdirSync(out)).toEqual([]);
  });
});
