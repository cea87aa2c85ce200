// The program as a user runs it (the built dist/cli.js): its figures, its files, and every refusal one line
// on stderr with exit code 2, before any work where the command line is at fault.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { app, root, runCli, scratchFolder } from "./support.js";

const folder = scratchFolder("nuvec-view-cli-");
const resnet = join(root, "fixtures", "traces", "resnet50-train.ndjson.gz");
const bert = join(root, "fixtures", "traces", "bert-dynamic.ndjson.gz");
const snapshot = join(app, "traces", "toy-train.pickle");

function refused(args: string[], pattern: RegExp): void {
  const ran = runCli(args);
  expect(ran.status, ran.stderr).toBe(2);
  expect(ran.stdout).toBe("");
  const lines = ran.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^nuvec-memory-view: /);
  expect(lines[0]).toMatch(pattern);
}

describe("nuvec-memory-view", () => {
  it("prints every flag with --help", () => {
    const ran = runCli(["--help"]);
    expect(ran.status).toBe(0);
    for (const flag of ["--compare", "--html", "--export-torch", "--export-chrome", "--policies", "--device"])
      expect(ran.stdout).toContain(flag);
  });

  it("replays under the header's policy by default, and prints one JSON object with --json", () => {
    const ran = runCli([resnet, "--json"]);
    expect(ran.status, ran.stderr).toBe(0);
    const printed = JSON.parse(ran.stdout);
    expect(printed).toMatchObject({ trace: "resnet50-train", events: 5024, marks: 0, written: {} });
    expect(printed.device).toMatchObject({ from: "default", workingSet: 8 * 1024 ** 3 });
    expect(printed.policies.map((outcome: { policy: string }) => outcome.policy)).toEqual(["bounded"]);
  });

  it("writes the view and both exports, and says where", () => {
    const html = join(folder, "out", "view.html");
    const torch = join(folder, "out", "view.pickle");
    const chrome = join(folder, "out", "view.json");
    const ran = runCli([
      resnet,
      "--policies",
      "mlx,bounded",
      "--html",
      html,
      "--export-torch",
      torch,
      "--export-chrome",
      chrome,
    ]);
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/resnet50-train: 5024 events; device \(defaults: the header records none\)/);
    expect(ran.stdout).toContain(`memory view: ${html}`);
    expect(readFileSync(html, "utf8")).toContain("policies mlx, bounded");
    expect(readFileSync(torch).subarray(0, 2)).toEqual(Buffer.from([0x80, 0x02]));
    const events = JSON.parse(readFileSync(chrome, "utf8")).traceEvents as { name: string }[];
    expect(new Set(events.map((event) => event.name))).toEqual(
      new Set(["process_name", "thread_name", "memory (mlx)", "memory (bounded)"]),
    );
  });

  it("compares traces: one table, each trace's view in one file", () => {
    const html = join(folder, "compare.html");
    const ran = runCli([resnet, "--compare", bert, snapshot, "--policy", "mlx", "--html", html]);
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/^1: resnet50-train: 5024 events/m);
    expect(ran.stdout).toMatch(/^3: toy-train/m);
    expect(ran.stdout).toMatch(/1:mlx +2:mlx +3:mlx +3:PyTorch/);
    const page = readFileSync(html, "utf8");
    expect(page.match(/<iframe class="nuvec-view"/g)).toHaveLength(3);
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it("escapes a trace's name on the terminal and keeps it as text in the view", () => {
    const path = join(folder, "hostile.ndjson.gz");
    const header = { name: "\u001b[2J<script>alert(1)</script>", workload: "\u202eevil" };
    writeFileSync(
      path,
      gzipSync(
        `${[header, ["k", "<img src=x onerror=alert(1)>"], ["a", 0, 64], ["f", 0]].map((line) => JSON.stringify(line)).join("\n")}\n`,
      ),
    );
    const html = join(folder, "hostile.html");
    const ran = runCli([path, "--html", html]);
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("\\x1b[2J<script>");
    expect(ran.stdout).not.toContain("\u001b");
    const page = readFileSync(html, "utf8");
    expect(page).not.toContain("<script>alert(1)");
    expect(page).not.toContain("<img src=x");
  });

  it("refuses a bad command line before any work, in one line", () => {
    refused([], /no TRACE given/);
    refused([resnet, bert], /one TRACE, or more after --compare/);
    refused([resnet, "--bogus"], /Unknown option '--bogus'/);
    refused([resnet, "--policy", "lru"], /--policy: "lru" is not a policy \(bounded, mlx, segments\)/);
    refused([resnet, "--policy", "mlx", "--policies", "all"], /--policy and --policies: give one/);
    refused([resnet, "--working-set", "12XB"], /--working-set: "12XB" is not a size/);
    refused([resnet, "--reserve-ratio", "0"], /--reserve-ratio: "0" is not a positive number/);
    refused(
      [resnet, "--bounded-release", "random"],
      /--bounded-release: "random" is not fitting, least-recent, largest/,
    );
    refused([resnet, "--device", "x"], /--device: "x" is not a device number/);
    refused([resnet, "--device", "1"], /--device applies to PyTorch snapshots only/);
    refused([resnet, "--compare", bert, "--export-torch", join(folder, "x.pickle")], /take one TRACE/);
    refused([resnet, "--html", ""], /--html: an empty path/);
    mkdirSync(join(folder, "a-folder"), { recursive: true });
    refused([resnet, "--html", join(folder, "a-folder")], /--html: .* is not a regular file/);
    writeFileSync(join(folder, "a-file"), "");
    refused(
      [resnet, "--export-chrome", join(folder, "a-file", "x.json")],
      /--export-chrome: cannot make the folder .* \(EEXIST|ENOTDIR\)/,
    );
    expect(existsSync(join(folder, "never.html"))).toBe(false);
  });

  it("refuses bad files as typed errors, in one line: missing, a folder, a FIFO, corrupt, impossible events", () => {
    refused([join(folder, "missing.ndjson")], /trace file not found/);
    refused([folder], /not a regular file/);
    const fifo = join(folder, "fifo.ndjson");
    if (spawnSync("mkfifo", [fifo]).status === 0) refused([fifo], /not a regular file/);
    const corrupt = join(folder, "corrupt.ndjson");
    writeFileSync(corrupt, '{"name":"c"}\n["a",0,1]\nnot json\n');
    refused([corrupt], /line 3: not JSON/);
    const impossible = join(folder, "impossible.ndjson");
    writeFileSync(impossible, '["a",0,1]\n["f",1]\n');
    refused([impossible], /trace event 1 \(\["f",1\]\): free of an id never allocated/);
    const badMark = join(folder, "bad-mark.ndjson");
    writeFileSync(badMark, '["a",0,1]\n["k",5]\n');
    refused([badMark], /not an event/);
    const badPickle = join(folder, "bad.pickle");
    writeFileSync(badPickle, Buffer.from([0x80, 0x02, 0x63, 0x6f, 0x73, 0x0a]));
    refused([badPickle], /not a readable PyTorch memory snapshot/);
  });
});
