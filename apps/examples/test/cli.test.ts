// The example programs end to end, from their built files (the test task builds first).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { ALLOCATOR_POLICIES } from "@nuvec/allocator";
import { MEMORY_STATS_FIELDS } from "@nuvec/stats";
import { afterAll, describe, expect, it } from "vitest";

const app = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shippedTrace = join(app, "traces", "gpt2-decode-cut.ndjson.gz");
const folder = mkdtempSync(join(tmpdir(), "nuvec-examples-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function run(program: string, args: string[]) {
  const result = spawnSync(process.execPath, [join(app, "dist", `${program}.js`), ...args], {
    encoding: "utf8",
    env: { ...process.env, FORCE_COLOR: "0" },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("replay", () => {
  it("prints one JSON object with every MemoryStats field and the counters", () => {
    const { status, stdout } = run("replay", [shippedTrace, "--json"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    for (const field of [...MEMORY_STATS_FIELDS, "events", "cacheHits", "peakLive", "nsPerEvent"]) {
      expect(result, field).toHaveProperty(field);
    }
    expect(result.events).toBe(24000);
    expect(result.memoryLimit).toBe(12 * 1024 ** 3);
    expect(result.cacheHits + result.systemAllocations).toBe(12097);
  });

  it("applies --cache-limit and --memory-limit with suffixes, and writes an HTML report", () => {
    const html = join(folder, "replay.html");
    const { status, stdout } = run("replay", [
      shippedTrace,
      "--cache-limit",
      "64MiB",
      "--memory-limit=8GiB",
      "--html",
      html,
      "--json",
    ]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.cacheLimit).toBe(64 * 1024 ** 2);
    expect(result.memoryLimit).toBe(8 * 1024 ** 3);
    expect(result.cache).toBeLessThanOrEqual(64 * 1024 ** 2);
    const page = readFileSync(html, "utf8");
    expect(page).toContain('id="nuvec-chart"');
    expect(page).toContain('id="nuvec-data"');
    // Self-contained: no script or stylesheet from elsewhere.
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it("runs the bounded policy by default and MLX's on request, with peakLive to read reserved/live off", () => {
    const replay = (args: string[]) => JSON.parse(run("replay", [shippedTrace, "--json", ...args]).stdout);
    const mlx = replay(["--policy", "mlx"]);
    const bounded = replay(["--reserve-ratio", "1.3"]);
    const largest = replay(["--policy=bounded", "--bounded-release", "largest"]);
    expect([mlx.policy, bounded.policy, largest.policy]).toEqual(["mlx", "bounded", "bounded"]);
    expect(bounded.peakLive).toBe(mlx.peakLive);
    expect(bounded.peakReserved).toBeLessThanOrEqual(mlx.peakReserved);
    expect(bounded.peakReserved).toBeLessThanOrEqual(1.3 * bounded.peakLive);
    expect(largest.peakReserved).toBeLessThanOrEqual(1.3 * largest.peakLive);
    expect(run("replay", [shippedTrace, "--bounded-release", "biggest"]).status).toBe(2);
  });

  it("replays a recorded trace with mappings and limit changes", () => {
    const path = join(folder, "recorded.ndjson.gz");
    const lines = [
      { name: "recorded", events: 7 },
      ["a", 0, 1000],
      ["m", 0, 100000],
      ["l", "cache", 0],
      ["f", 0],
      ["p"],
      ["u", 0],
      ["c"],
    ];
    writeFileSync(path, gzipSync(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`));
    const { status, stdout } = run("replay", [path, "--json"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ active: 0, cache: 0, mapped: 0, cacheLimit: 0, systemAllocations: 1 });
    // resetPeak came while the 7-page mapping (100000 bytes in 16 KiB pages) was live.
    expect(result.peakActiveWithMapped).toBe(7 * 16384);
  });

  it("compares every policy the allocator has, in one pass, with the figures of each replayed alone", () => {
    const { status, stdout } = run("replay", [shippedTrace, "--compare", "all", "--json"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.policies.map((policy: { policy: string }) => policy.policy)).toEqual([
      ...ALLOCATOR_POLICIES,
    ]);
    for (const compared of result.policies) {
      const alone = JSON.parse(run("replay", [shippedTrace, "--json", "--policy", compared.policy]).stdout);
      for (const field of [...MEMORY_STATS_FIELDS, "events", "cacheHits", "peakReserved", "peakLive"]) {
        expect(compared[field], `${compared.policy} ${field}`).toBe(alone[field]);
      }
    }
    const table = run("replay", [shippedTrace, "--compare", ALLOCATOR_POLICIES.join(",")]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/peak reserved/);
    for (const line of table.stdout.split("\n")) expect(line.length).toBeLessThanOrEqual(80);
  });

  it("replays a PyTorch snapshot: its device, its skipped frees and PyTorch's own peak reserved", () => {
    const snapshot = join(app, "traces", "toy-train.pickle");
    const figures = JSON.parse(readFileSync(join(app, "traces", "toy-train.figures.json"), "utf8"));
    const { status, stdout } = run("replay", [snapshot, "--compare", "all", "--json", "--device", "1"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.events).toBe(figures["1"].allocations + figures["1"].frees);
    expect(result.pytorch).toMatchObject({
      device: 1,
      devices: [0, 1],
      peakReserved: figures["1"].peakReserved,
    });
    const text = run("replay", [snapshot]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(
      `${figures["0"].skippedFrees} frees of blocks allocated before recording skipped`,
    );
    const hostile = join(folder, "evil.pickle");
    writeFileSync(hostile, Buffer.from("\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.", "latin1"));
    const refused = run("replay", [hostile]);
    expect(refused.status).toBe(2);
    expect(refused.stderr.split("\n")[0]).toMatch(/refused the global os\.system.*ERR_NUVEC_TRACE_CORRUPT/);
  });

  // What the flags' parser refuses (an unknown flag, a size that is not one) is src/lib/arguments.test.ts's;
  // here, the refusals of the replay program's own rules.
  it.each([
    [["--json"], /no TRACE/],
    [[shippedTrace, "--compare", "mlx,lru"], /--compare: "lru" is not a policy/],
    [[shippedTrace, "--compare", "mlx", "--policy", "mlx"], /give one/],
    [[shippedTrace, "--device", "0"], /PyTorch snapshots only/],
    [[shippedTrace, "--device", "x"], /--device/],
    [[join(folder, "missing.ndjson.gz")], /missing\.ndjson\.gz/],
    [[shippedTrace, "--policy", "lru"], /--policy/],
  ])("refuses %j with one clear line and exit code 2", (args, message) => {
    const { status, stderr } = run("replay", args as string[]);
    expect(status).toBe(2);
    expect(stderr.split("\n")[0]).toMatch(message);
  });

  it("refuses a file that is not a trace", () => {
    const path = join(folder, "garbage.ndjson.gz");
    writeFileSync(path, "this is not gzip");
    const { status, stderr } = run("replay", [path]);
    expect(status).toBe(2);
    expect(stderr.split("\n")[0]).toMatch(/^replay: /);
  });
});

describe("demo", () => {
  it("maps, wires, replays and writes its report on the real device", () => {
    const report = join(folder, "demo.html");
    const { status, stdout, stderr } = run("demo", ["--checkpoint-size", "24MiB", "--report", report]);
    expect(stderr).toBe("");
    expect(status).toBe(0);
    for (const title of ["after mapping the checkpoint", "after wiring", "after the workload"]) {
      expect(stdout).toContain(`${title}, what changed:`);
    }
    expect(stdout).toMatch(/mapped .*model\.safetensors: \d+ tensors/);
    expect(stdout).toContain("peakActiveWithMapped");
    expect(existsSync(report)).toBe(true);
    expect(readFileSync(report, "utf8")).toContain('id="nuvec-chart"');
  });

  it("says what is wrong with a bad flag, exit code 2", () => {
    const { status, stderr } = run("demo", ["--checkpoint-size", "big"]);
    expect(status).toBe(2);
    expect(stderr).toMatch(/--checkpoint-size/);
  });
});

describe("checkpoint", () => {
  it("lists the tensors of a safetensors file without copying it", () => {
    const demoFile = join(folder, "tiny.safetensors");
    const header = JSON.stringify({ w: { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] } });
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(header.length));
    writeFileSync(demoFile, Buffer.concat([prefix, Buffer.from(header), Buffer.alloc(16)]));
    const { status, stdout } = run("checkpoint", [demoFile, "--json"]);
    expect(status).toBe(0);
    const result = JSON.parse(stdout);
    expect(result.tensors).toEqual([
      { name: "w", dtype: "F32", shape: [2, 2], offset: 8 + header.length, byteLength: 16 },
    ]);
  });

  it("gives a typed error for a missing file, exit code 2", () => {
    const { status, stderr } = run("checkpoint", [join(folder, "nope.safetensors")]);
    expect(status).toBe(2);
    expect(stderr).toMatch(/nope\.safetensors/);
  });
});
