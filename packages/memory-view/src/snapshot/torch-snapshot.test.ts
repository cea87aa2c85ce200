// PyTorch memory snapshots as replay input: the fixture's figures (computed by the script that wrote it, not by
// nuvec), replay under every policy, and hostile pickles, each refused with a typed error and no code run.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ALLOCATOR_POLICIES, FormatError, replayTrace } from "@nuvec/allocator";
import { describe, expect, it } from "vitest";
import { app, scratchFolder } from "../../test/support.js";
import { replayForView } from "../replay/replay.js";
import { memoryViewCore } from "../view/core.js";
import { looksLikeTorchSnapshot, readTorchSnapshot } from "./torch-snapshot.js";

const traces = join(app, "traces");
const fixture = join(traces, "toy-train.pickle");
/** A snapshot's figures as scripts/snapshot_figures.py counted them from its entries, keyed by device. */
const figuresOf = (name: string) =>
  JSON.parse(readFileSync(join(traces, `${name}.figures.json`), "utf8")) as Record<string, SnapshotFigures>;
const figures = figuresOf("toy-train");
/** The toy fixture, made without PyTorch, and real snapshots recorded by PyTorch on a GPU. */
const snapshots = [
  { name: "toy-train", path: fixture },
  { name: "transformer-train", path: join(traces, "transformer-train.pickle.gz") },
  { name: "inference-loop", path: join(traces, "inference-loop.pickle.gz") },
];
type SnapshotFigures = {
  entries: number;
  allocations: number;
  frees: number;
  skippedFrees: number;
  liveAtEnd: number;
  peakLiveBytes: number;
  reservedAtStart: number;
  peakReserved: number;
  reservedAtEnd: number;
};
const folder = scratchFolder("nuvec-snapshot-");
const GiB = 1024 ** 3;

/** A pickle (protocol 2) of plain data: Maps and objects become dicts, arrays lists. For tests only. */
function pickle(value: unknown): Buffer {
  const parts: Buffer[] = [Buffer.from([0x80, 0x02])];
  /** An opcode and its argument of `size` bytes, written by `write` (at offset 1). */
  const op = (code: number, size = 0, write = (_bytes: Buffer) => {}) => {
    const bytes = Buffer.alloc(1 + size, code);
    write(bytes);
    parts.push(bytes);
  };
  // NONE, NEWTRUE and NEWFALSE, BININT, BINFLOAT, LONG1 of 8 bytes (addresses past 2^31), BINUNICODE.
  const put = (item: unknown): void => {
    if (item === null || item === undefined) op(0x4e);
    else if (typeof item === "boolean") op(item ? 0x88 : 0x89);
    else if (typeof item === "number" && Number.isInteger(item) && item >= 0 && item < 2 ** 31)
      op(0x4a, 4, (bytes) => bytes.writeInt32LE(item, 1));
    else if (typeof item === "number" && !Number.isInteger(item))
      op(0x47, 8, (bytes) => bytes.writeDoubleBE(item, 1));
    else if (typeof item === "number" || typeof item === "bigint")
      op(0x8a, 9, (bytes) => {
        bytes[1] = 8;
        bytes.writeBigUInt64LE(BigInt(item), 2);
      });
    else if (typeof item === "string") {
      const text = Buffer.from(item, "utf8");
      op(0x58, 4, (bytes) => bytes.writeUInt32LE(text.length, 1));
      parts.push(text);
    } else if (Array.isArray(item)) {
      parts.push(Buffer.from("](")); // EMPTY_LIST, MARK
      for (const element of item) put(element);
      parts.push(Buffer.from("e")); // APPENDS
    } else {
      parts.push(Buffer.from("}(")); // EMPTY_DICT, MARK
      const entries = item instanceof Map ? [...item.entries()] : Object.entries(item as object);
      for (const [key, element] of entries) {
        put(key);
        put(element);
      }
      parts.push(Buffer.from("u")); // SETITEMS
    }
  };
  put(value);
  parts.push(Buffer.from("."));
  return Buffer.concat(parts);
}

/** Bytes as written: strings each character one byte, Buffers as they are. */
const raw = (...pieces: (string | Buffer)[]) =>
  Buffer.concat(pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece, "latin1") : piece)));
/** One value's opcodes, without the protocol header and STOP: a piece of a hand-written pickle. */
const body = (value: unknown) => pickle(value).subarray(2, -1);

let written = 0;
function file(bytes: Buffer | string, name?: string): string {
  written += 1;
  const path = join(folder, name ?? `snapshot-${written}.pickle`);
  writeFileSync(path, bytes);
  return path;
}

/** The typed error `path` is refused with. */
function refusal(path: string, options: { device?: number; maxBytes?: number } = {}): FormatError {
  try {
    readTorchSnapshot(path, options);
  } catch (error) {
    expect(error).toBeInstanceOf(FormatError);
    return error as FormatError;
  }
  throw new Error(`${path} was read`);
}

const frame = (name: string, filename: string, line = 1) => ({ name, filename, line });
/** A trace entry of the snapshot, with its stack (innermost frame first). */
const entry = (
  action: string,
  addr: number,
  size: number,
  frames = [frame("forward", "/m/model.py", 3)],
) => ({
  action,
  addr,
  size,
  stream: 0,
  frames,
});

describe("a PyTorch snapshot as a trace", () => {
  it("reads the fixture's training device by default, its header and its frames as labels", () => {
    const torch = readTorchSnapshot(fixture);
    const expected = figures["0"] as (typeof figures)["0"];
    expect(torch.device).toBe(0);
    expect(torch.devices).toEqual([0, 1]);
    const header = torch.items[0] as { name: string; events: number };
    expect(header.name).toBe("toy-train");
    expect(header.events).toBe(expected.allocations + expected.frees);
    // Allocations carry their frames, innermost first, interned.
    expect(torch.allocationLabels.length).toBe(expected.allocations);
    expect(torch.labels[torch.allocationLabels[0] as number]).toBe(
      "Linear.__init__ (/opt/model/Linear.py:10)\nBlock.__init__ (/opt/model/Block.py:17)\nmain (/opt/model/main.py:24)",
    );
    expect(new Set(torch.labels).size).toBe(torch.labels.length);
  });

  it("reads another device when asked (its figures: the table below)", () => {
    expect(readTorchSnapshot(fixture, { device: 1 }).device).toBe(1);
    expect(refusal(fixture, { device: 7 }).code).toBe("ERR_NUVEC_TRACE_EMPTY");
  });

  for (const { name, path } of snapshots) {
    for (const [device, expected] of Object.entries(figuresOf(name))) {
      it(`${name}, device ${device}: the counts of the snapshot's own entries`, () => {
        const { reservedAtStart, peakReserved, reserved, counts } = readTorchSnapshot(path, {
          device: Number(device),
        });
        // (The workload's peak is the replay's test, below; the script's count of every entry is its own.)
        const { peakLiveBytes: _drawn, entries: _all, ...counted } = expected;
        const reservedAtEnd = reserved.value.at(-1);
        expect({ ...counts, reservedAtStart, peakReserved, reservedAtEnd }).toMatchObject(counted);
      });

      it(`${name}, device ${device}: every policy replays to the figures of the allocator's own replay`, async () => {
        const torch = readTorchSnapshot(path, { device: Number(device) });
        const result = await replayForView([torch.items], {
          policies: ALLOCATOR_POLICIES,
          workingSet: 8 * GiB,
          memorySize: 16 * GiB,
          record: true,
          labels: torch.allocationLabels,
        });
        expect(result.outcomes.map((outcome) => outcome.policy)).toEqual([...ALLOCATOR_POLICIES]);
        for (const outcome of result.outcomes) {
          const alone = replayTrace(torch.items as Parameters<typeof replayTrace>[0], {
            policy: outcome.policy as (typeof ALLOCATOR_POLICIES)[number],
            workingSet: 8 * GiB,
            memorySize: 16 * GiB,
          });
          expect(outcome.stats).toEqual(alone.stats);
          expect([outcome.peakReserved, outcome.systemAllocations]).toEqual([
            alone.stats.peakReserved,
            alone.stats.systemAllocations,
          ]);
        }
        // The workload the view draws: the live requested bytes peak where the script counted them.
        const model = memoryViewCore().build(result.workload as NonNullable<typeof result.workload>);
        expect(model.live.reduce((peak, value) => Math.max(peak, value), 0)).toBe(expected.peakLiveBytes);
        expect([...(result.workload?.label ?? [])]).toEqual([...torch.allocationLabels]);
      });
    }
  }

  it("reads a gzipped snapshot, and tells a snapshot by its name or its first bytes", () => {
    const gzipped = file(gzipSync(readFileSync(fixture)), "toy.pickle.gz");
    expect(readTorchSnapshot(gzipped).counts).toEqual(readTorchSnapshot(fixture).counts);
    expect(looksLikeTorchSnapshot(gzipped)).toBe(true);
    expect(looksLikeTorchSnapshot(file(readFileSync(fixture), "no-extension"))).toBe(true);
    expect(looksLikeTorchSnapshot(file('{"name":"x"}\n["a",0,1]\n', "trace.ndjson"))).toBe(false);
    expect(looksLikeTorchSnapshot(folder)).toBe(false);
  });

  it("uses free_requested when a snapshot has no free_completed (older PyTorch), and skips unknown frees", () => {
    const entries = [
      entry("free_requested", 5000, 512),
      entry("alloc", 2 ** 40, 1024),
      entry("alloc", 2 ** 40 + 1024, 2048),
      entry("free_requested", 2 ** 40, 1024),
      entry("alloc", 2 ** 40, 512),
    ];
    const torch = readTorchSnapshot(file(pickle({ device_traces: [entries] })));
    expect(torch.items.slice(1)).toEqual([
      ["a", 0, 1024],
      ["a", 1, 2048],
      ["f", 0],
      ["a", 2, 512],
    ]);
    expect(torch.counts.skippedFrees).toBe(1);
    expect(torch.counts.liveAtEnd).toBe(2);
    expect(torch.reservedAtStart).toBe(0);
  });
});

describe("the globals a snapshot may hold", () => {
  it("reads collections.OrderedDict as plain data (an older PyTorch's allocator settings)", () => {
    const settings = raw("ccollections\nOrderedDict\n)R", body("max_split_size"), body(7), "s");
    const traces = raw(body("device_traces"), body([[entry("alloc", 2 ** 44, 4096)]]));
    const torch = readTorchSnapshot(
      file(raw("\x80\x02}(", traces, body("allocator_settings"), settings, "u.")),
    );
    expect(torch.items.slice(1)).toEqual([["a", 0, 4096]]);
  });
});

describe("allocation labels", () => {
  it("keep the innermost Python frame, then the frames outside torch; C++-only stacks keep their own", () => {
    const python = [
      frame("c10::cuda::CUDACachingAllocator::malloc", "??", 0),
      frame("linear", "/py/site-packages/torch/nn/modules/linear.py", 125),
      frame("_call_impl", "/py/site-packages/torch/nn/modules/module.py", 1747),
      frame("forward", "/home/me/model.py", 40),
      frame("<module>", "/home/me/train.py", 9),
    ];
    const native = [frame("at::empty", "aten.cpp"), frame("c10::alloc", "c10.cpp")];
    const allocations = [
      entry("alloc", 4096, 512, python),
      entry("alloc", 8192, 512, native),
      entry("alloc", 16384, 512, []),
    ];
    const path = file(pickle({ device_traces: [allocations] }));
    const torch = readTorchSnapshot(path);
    expect(torch.labels).toEqual([
      "linear (/py/site-packages/torch/nn/modules/linear.py:125)\nforward (/home/me/model.py:40)\n<module> (/home/me/train.py:9)",
      "at::empty (aten.cpp:1)\nc10::alloc (c10.cpp:1)",
    ]);
    expect([...torch.allocationLabels]).toEqual([0, 1, -1]);
  });
});

describe("hostile and malformed snapshots: a typed error, and no code runs", () => {
  const marker = join(folder, "ran");
  const command = `touch ${marker}`;
  const reduceOf = (global: string) => raw(`\x80\x02c${global}\n`, body(command), "\x85R.");
  const hostile: [string, Buffer, string][] = [
    ["a __reduce__ to os.system (GLOBAL)", reduceOf("os\nsystem"), "refused the global os.system"],
    ["posix.system", reduceOf("posix\nsystem"), "refused the global posix.system"],
    [
      "builtins.eval through STACK_GLOBAL",
      raw(
        "\x80\x04\x8c\x08builtins\x8c\x04eval\x93",
        body(`__import__('os').system('${command}')`),
        "\x85R.",
      ),
      "refused the global builtins.eval",
    ],
    ["INST of os.system", raw("\x80\x02(", body(command), "ios\nsystem\n."), "refused the global os.system"],
    ["NEWOBJ of a class", raw("\x80\x02c__main__\nEvil\n)\x81."), "refused the global __main__.Evil"],
    ["a persistent id", raw("\x80\x02Pweights\n."), "refused a persistent id"],
    ["an extension code", raw("\x80\x02\x82\x01."), "refused an extension code"],
    ["REDUCE of a list", raw("\x80\x02]]R."), "a REDUCE of something that is not collections.OrderedDict"],
    ["BUILD setting __proto__", raw("\x80\x02}}", body("__proto__"), "}sb."), "(BUILD), which a memory"],
  ];
  for (const [name, bytes, why] of hostile) {
    it(`refuses ${name}`, () => {
      const error = refusal(file(bytes));
      expect(error.code).toBe("ERR_NUVEC_TRACE_CORRUPT");
      expect(error.message).toContain(why);
      expect(existsSync(marker)).toBe(false);
    });
  }

  it("refuses a huge length without reading or allocating it: the reader's refusal, with the path", () => {
    const path = file(raw("\x80\x02\x58\xf0\xff\xff\xffab"));
    expect(refusal(path).message).toBe(
      `${path} is not a readable PyTorch memory snapshot: a string of 4294967280 bytes (a snapshot's strings are under 65536) at byte 2`,
    );
  });

  it("refuses every truncation of the fixture", () => {
    const bytes = readFileSync(fixture);
    for (const cut of [0, 1, 2, 3, 100, 1000, bytes.length >> 1, bytes.length - 2, bytes.length - 1]) {
      const error = refusal(file(bytes.subarray(0, cut)));
      expect(error.code, `cut at ${cut}`).toBe("ERR_NUVEC_TRACE_CORRUPT");
    }
  });

  it("refuses a gzip bomb at the limit, a file past it, and what is not a file", () => {
    const bomb = file(gzipSync(Buffer.alloc(64 * 1024 * 1024)), "bomb.pickle.gz");
    expect(refusal(bomb, { maxBytes: 1024 * 1024 }).code).toBe("ERR_NUVEC_TRACE_TOO_LARGE");
    // Thirty million EMPTY_DICTs gzip to 29 KiB: inflated only to the floor of 16 MiB, then refused.
    const dicts = gzipSync(Buffer.concat([Buffer.from([0x80, 4]), Buffer.alloc(3e7, "}")]), { level: 9 });
    const started = performance.now();
    const inflated = refusal(file(dicts, "dicts.pickle.gz"));
    expect(performance.now() - started).toBeLessThan(5000);
    expect(inflated.code).toBe("ERR_NUVEC_TRACE_TOO_LARGE");
    expect(inflated.message).toBe(
      `${join(folder, "dicts.pickle.gz")} inflates to more than 16777216 bytes (${dicts.length} compressed; a snapshot inflates at most 64 times, or to 16777216 bytes)`,
    );
    expect(refusal(fixture, { maxBytes: 1000 }).code).toBe("ERR_NUVEC_TRACE_TOO_LARGE");
    expect(refusal(file(Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3]), "bad.pickle.gz")).code).toBe(
      "ERR_NUVEC_TRACE_CORRUPT",
    );
    mkdirSync(join(folder, "dir.pickle"), { recursive: true });
    expect(refusal(join(folder, "dir.pickle")).code).toBe("ERR_NUVEC_TRACE_NOT_A_FILE");
    expect(refusal(join(folder, "missing.pickle")).code).toBe("ERR_NUVEC_TRACE_NOT_FOUND");
    expect(refusal(file("not a pickle at all")).code).toBe("ERR_NUVEC_TRACE_CORRUPT");
  });

  it("refuses stacks that make more label text than one character a byte of pickle (above 8 MiB)", () => {
    // Sixteen frames of 240-character names, defined once (memo entries 0 to 15); then allocations whose
    // frames are eight memo references each, in ever new orders: 2,007 characters of label for 80 bytes.
    const u32 = (value: number) => {
      const bytes = Buffer.alloc(4);
      bytes.writeUInt32LE(value);
      return bytes;
    };
    const put = (index: number) => raw("r", u32(index));
    const get = (index: number) => raw("j", u32(index));
    const frames = Array.from({ length: 16 }, (_, index) =>
      raw(body(frame(`${index}`.padStart(240, "n"), "/f.py")), put(index)),
    );
    const names = ["action", "alloc", "addr", "size", "frames"].map((name, index) =>
      raw(body(name), put(16 + index)),
    );
    const allocation = (index: number) =>
      raw(
        "}(",
        get(16),
        get(17),
        get(18),
        body(4096 + 512 * index),
        get(19),
        body(512),
        get(20),
        "](",
        ...Array.from({ length: 8 }, (_, digit) => get((index >> (4 * digit)) & 15)),
        "eu",
      );
    const path = file(
      raw(
        "\x80\x02}(",
        body("definitions"),
        "](",
        ...frames,
        ...names,
        "e",
        body("device_traces"),
        "]](",
        ...Array.from({ length: 6000 }, (_, index) => allocation(index)),
        "eau.",
      ),
    );
    const budget = 8 * 1024 * 1024 + statSync(path).size;
    expect(refusal(path).message).toBe(
      `${path} is not a readable PyTorch memory snapshot: its stacks make more than ${budget} characters of distinct labels (one a byte of pickle, above 8388608)`,
    );
  });

  it("refuses data of the wrong shape", () => {
    const cases: [unknown, string][] = [
      [[1, 2, 3], "device_traces"],
      [{ device_traces: "no" }, "device_traces"],
      [{ device_traces: [[{ action: 7 }]] }, "no action"],
      [{ device_traces: [[{ action: "alloc", addr: 1, size: "big" }]] }, "addr and size"],
      [{ device_traces: [[{ action: "alloc", addr: 1.5, size: 4 }]] }, "addr and size"],
      [{ device_traces: [[entry("alloc", 64, 512), entry("alloc", 64, 512)]] }, "already allocated"],
    ];
    for (const [value, words] of cases) {
      const error = refusal(file(pickle(value)));
      expect(error.code).toBe("ERR_NUVEC_TRACE_CORRUPT");
      expect(error.message).toContain(words);
    }
    // A dict may name __proto__: a key like any other (the reader's tests: no prototype changes).
    const proto = raw("\x80\x02}", body("__proto__"), body({ device_traces: 1 }), "s.");
    expect(refusal(file(proto)).message).toContain("no device_traces list");
    // No allocation at all.
    expect(refusal(file(pickle({ device_traces: [[], [entry("segment_alloc", 0, 2 ** 21)]] }))).code).toBe(
      "ERR_NUVEC_TRACE_EMPTY",
    );
    expect(refusal(file(pickle({ device_traces: [] }))).code).toBe("ERR_NUVEC_TRACE_EMPTY");
  });
});
