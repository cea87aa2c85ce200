import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { replayOptionsFromHeader, replayTrace, type TraceHeader, TraceValidator } from "@nuvec/allocator";
import { readTrace } from "@nuvec/allocator/node";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { thrown } from "../../stats/test/thrown.js";
import { deviceBuilt } from "../test/reliability/support.js";
import { Device, type TraceOptions } from "./index.js";

const scratch = scratchFolder("nuvec-trace-");
const MiB = 1024 * 1024;

function open(): Device {
  return Device.open({ backend: new MockBackend({ recommendedMaxWorkingSetSize: 1024 * MiB }) });
}

/** Everything a refusal must leave as it was. */
function figures(device: Device) {
  return { stats: device.memoryStats(), counters: device.counters() };
}

describe("labels, marks and stacks in a Device's trace", () => {
  it("records labels once, marks in place, mapped files by path, and replays to the Device's figures", () => {
    const device = open();
    const weights = scratch.write("weights.bin", new Uint8Array(20_000));
    device.startTrace({ name: "decode", stacks: 4 });
    device.mark("step 0");
    const kv = device.malloc(4096, { label: "kv-cache" });
    const logits = device.malloc(100, { label: "logits" });
    const file = device.mapFile(weights);
    device.mark("step 1");
    logits.free();
    device.malloc(100, { label: "kv-cache" });
    const trace = device.stopTrace();
    const events = trace.events;
    expect(events.map((event) => event.slice(0, 2))).toEqual([
      ["k", "step 0"],
      ["n", 0],
      ["s", 0],
      ["a", 0],
      ["n", 1],
      ["s", 1],
      ["a", 1],
      ["n", 2],
      ["m", 0],
      ["k", "step 1"],
      ["f", 1],
      ["s", 2],
      ["a", 2],
    ]);
    expect(events[1]).toEqual(["n", 0, "kv-cache"]);
    expect(events[3]).toEqual(["a", 0, 4096, 0, 0]);
    expect(events[7]).toEqual(["n", 2, weights]);
    expect(events[8]).toEqual(["m", 0, 20_000, 2]);
    // The stack starts at this test's own frame (the Device's are left out), at most 4 frames.
    const frames = events[2]?.[2] as string[];
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.length).toBeLessThanOrEqual(4);
    expect(frames[0]).toMatch(/trace\.test\.ts/);
    expect(trace.header).toMatchObject({ events: 13, stack_frames: 4, allocations: 3 });
    const replay = replayTrace(
      [trace.header as TraceHeader, ...events],
      replayOptionsFromHeader(trace.header),
    );
    const stats = device.memoryStats();
    expect(replay.stats).toMatchObject({
      active: stats.active,
      cache: stats.cache,
      mapped: stats.mapped,
      peakActive: stats.peakActive,
    });
    file.free();
    kv.free();
    device.close();
  });

  it("opens with the mapped files labelled by path; malloc's label is checked with no trace running", () => {
    const device = open();
    const path = scratch.write("early.bin", new Uint8Array(5000));
    const file = device.mapFile(path);
    device.startTrace();
    expect(device.stopTrace().events).toEqual([
      ["n", 0, path],
      ["m", 0, 5000, 0],
    ]);
    const before = figures(device);
    for (const label of ["", "x".repeat(129), "a\nb", "\u0000", 5, null, ["a"]]) {
      const error = thrown(() => device.malloc(64, { label: label as string }));
      expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "label" });
    }
    expect(thrown(() => device.malloc(64, { labl: "x" } as never))).toMatchObject({ argument: "labl" });
    expect(thrown(() => device.malloc(64, 5 as never))).toMatchObject({ argument: "options" });
    expect(figures(device)).toEqual(before);
    expect(device.malloc(64, { label: "x".repeat(128) }).length).toBe(64);
    file.free();
    device.close();
  });

  it("refuses a bad mark name and a mark on a closed device; a mark without a trace does nothing", () => {
    const device = open();
    device.mark("no trace running");
    for (const name of ["", "x".repeat(257), "a\tb", 7, undefined]) {
      expect(thrown(() => device.mark(name as string))).toMatchObject({
        code: "ERR_NUVEC_INVALID_ARGUMENT",
        argument: "name",
      });
    }
    device.startTrace();
    device.mark("x".repeat(256));
    expect(thrown(() => device.mark(""))).toMatchObject({ argument: "name" });
    expect(device.stopTrace().events).toEqual([["k", "x".repeat(256)]]);
    device.close();
    expect(thrown(() => device.mark("late"))).toMatchObject({ code: "ERR_NUVEC_DEVICE_CLOSED" });
  });
});

describe("stacks under a hostile Error", () => {
  it("a throwing Error.prepareStackTrace gives an empty stack, never a failed malloc", () => {
    const device = open();
    const saved = Error.prepareStackTrace;
    Error.prepareStackTrace = () => {
      throw new Error("hostile");
    };
    try {
      device.startTrace({ stacks: 3 });
      const buffer = device.malloc(100);
      expect(device.stopTrace().events).toEqual([
        ["s", 0, []],
        ["a", 0, 100, null, 0],
      ]);
      buffer.free();
    } finally {
      Error.prepareStackTrace = saved;
    }
    device.close();
  });
});

describe("startTrace's options", () => {
  it.each<[string, unknown, string]>([
    ["a limit of 0", { limit: 0 }, "limit"],
    ["a negative limit", { limit: -1 }, "limit"],
    ["a fractional limit", { limit: 1.5 }, "limit"],
    ["a limit as a string", { limit: "10" }, "limit"],
    ["an infinite limit", { limit: Number.POSITIVE_INFINITY }, "limit"],
    ["65 stack frames", { stacks: 65 }, "stacks"],
    ["a fractional number of frames", { stacks: 0.5 }, "stacks"],
    ["an empty file name", { file: "" }, "file"],
    ["a file that is no string", { file: 3 }, "file"],
    ["an unknown option", { limits: 3 }, "limits"],
    ["a name too long", { name: "x".repeat(257) }, "name"],
  ])("refuses %s with nothing started", (_, options, argument) => {
    const device = open();
    const before = figures(device);
    expect(thrown(() => device.startTrace(options as TraceOptions))).toMatchObject({
      code: "ERR_NUVEC_INVALID_ARGUMENT",
      argument,
    });
    expect(figures(device)).toEqual(before);
    expect(thrown(() => device.stopTrace())).toMatchObject({ code: "ERR_NUVEC_TRACE_RECORDING" });
    device.close();
  });

  it("refuses a file that cannot be opened, with nothing started and nothing created", () => {
    const device = open();
    const folder = join(scratch.folder, "a-folder");
    mkdirSync(folder);
    const before = figures(device);
    const missing = join(scratch.folder, "no-such-folder", "t.ndjson.gz");
    expect(thrown(() => device.startTrace({ file: missing }))).toMatchObject({
      code: "ERR_NUVEC_SYSTEM",
      errno: "ENOENT",
      path: missing,
    });
    expect(existsSync(missing)).toBe(false);
    expect(thrown(() => device.startTrace({ file: folder }))).toMatchObject({
      code: "ERR_NUVEC_SYSTEM",
      errno: "EISDIR",
    });
    expect(thrown(() => device.startTrace({ file: "/dev/null" }))).toMatchObject({
      code: "ERR_NUVEC_TRACE_NOT_A_FILE",
    });
    expect(thrown(() => device.startTrace({ file: "nul\u0000.gz" }))).toMatchObject({ argument: "file" });
    expect(figures(device)).toEqual(before);
    expect(thrown(() => device.stopTrace())).toMatchObject({ code: "ERR_NUVEC_TRACE_RECORDING" });
    // A second trace is refused before its file is touched.
    device.startTrace();
    const second = join(scratch.folder, "second.ndjson");
    expect(thrown(() => device.startTrace({ file: second }))).toMatchObject({
      code: "ERR_NUVEC_TRACE_RECORDING",
    });
    expect(existsSync(second)).toBe(false);
    device.stopTrace();
    device.close();
  });

  it("stops recording at the limit and says so in the header", () => {
    const device = open();
    const early = device.malloc(1000);
    device.startTrace({ limit: 3 });
    const a = device.malloc(10);
    a.free();
    device.mark("fits");
    device.malloc(20);
    device.mark("dropped");
    const trace = device.stopTrace();
    // The opening's buffer at the bytes it is charged (the mock's page is 1 KiB).
    expect(trace.events).toEqual([
      ["a", 0, 1024],
      ["a", 1, 10],
      ["f", 1],
      ["k", "fits"],
    ]);
    expect(trace.header).toMatchObject({ events: 4, limit: 3, limit_reached: true, events_dropped: 2 });
    early.free();
    device.close();
  });
});

describe("a trace streamed to a file", () => {
  it("round-trips labels, marks and stacks through gzip; the replay equals the Device's figures", async () => {
    const device = open();
    const path = join(scratch.folder, "run.ndjson.gz");
    const kept = device.malloc(3000, { label: "weights" });
    device.startTrace({ file: path, stacks: 2, name: "streamed" });
    const live: ReturnType<Device["malloc"]>[] = [];
    for (let step = 0; step < 500; step++) {
      device.mark(`step ${step}`);
      for (let token = 0; token < 20; token++)
        live.push(device.malloc(256 * (1 + (token % 5)), { label: `layer ${token % 4}` }));
      while (live.length > 30) live.shift()?.free();
      if (step % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const result = device.stopTrace();
    expect(result.events).toEqual([]);
    expect(result.header).toMatchObject({ name: "streamed", file: path, stack_frames: 2 });
    const text = gunzipSync(readFileSync(path)).toString();
    const lines = text.trimEnd().split("\n");
    expect(lines.length).toBe(1 + (result.header?.events as number));
    const header = JSON.parse(lines[0] as string);
    expect(header).toMatchObject({ name: "streamed", file: path, opening_events: 1, stack_frames: 2 });
    expect(header.events).toBeUndefined();
    const read = readTrace(path);
    expect(read.events.length).toBe(result.header?.events);
    expect(read.events[0]).toEqual(["a", 0, 3072]);
    expect(read.events.filter((event) => event[0] === "k").length).toBe(500);
    expect(read.events.filter((event) => event[0] === "n").length).toBe(4);
    const validator = new TraceValidator();
    for (const event of [read.header, ...read.events]) validator.check(event);
    const replay = replayTrace(
      [read.header as TraceHeader, ...read.events],
      replayOptionsFromHeader(read.header),
    );
    const stats = device.memoryStats();
    expect(replay.stats).toMatchObject({
      active: stats.active,
      cache: stats.cache,
      peakActive: stats.peakActive,
    });
    for (const buffer of live) buffer.free();
    kept.free();
    device.close();
  });

  it("a plain file (no .gz) is NDJSON; close() ends the file's trace", () => {
    const device = open();
    const path = join(scratch.folder, "plain.ndjson");
    device.startTrace({ file: path });
    device.malloc(64).free();
    device.close();
    expect(readFileSync(path, "utf8").split("\n").slice(1)).toEqual(['["a",0,64]', '["f",0]', ""]);
  });
});

describe("a trace file that cannot be written to its end", () => {
  it.skipIf(!deviceBuilt)(
    "a full file (RLIMIT_FSIZE of 8 KiB): stopTrace() throws the SystemCallError, counters unchanged",
    () => {
      const path = join(scratch.folder, "full.ndjson");
      const child = fileURLToPath(
        new URL("../test/reliability/children/trace-file-full.mjs", import.meta.url),
      );
      const result = spawnSync("prlimit", ["--fsize=8192", process.execPath, child, path], {
        encoding: "utf8",
      });
      expect(result.stderr).toBe("");
      expect(JSON.parse(result.stdout.trim())).toEqual({
        name: "SystemCallError",
        code: "ERR_NUVEC_SYSTEM",
        errno: "EFBIG",
        syscall: "write",
        unchanged: true,
        after: 2,
        rejections: 0,
      });
      expect(readFileSync(path).length).toBe(8192);
    },
  );
});
