// The snapshot pickle reader on its own: the values it makes, and every budget and refusal, each a
// PickleRefusal naming what it refused and where, in time and memory bounded by the input.
import { describe, expect, it } from "vitest";
import {
  HEAP_BYTES_FLOOR,
  HEAP_BYTES_PER_INPUT_BYTE,
  MAX_DEPTH,
  MAX_MARKS,
  MAX_STACK,
  PickleDict,
  PickleList,
  PickleRefusal,
  readSnapshotPickle,
} from "./snapshot-pickle.js";

/** Bytes as written: strings each character one byte, Buffers as they are. */
const raw = (...pieces: (string | Buffer)[]) =>
  Buffer.concat(pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece, "latin1") : piece)));
/** A protocol-4 pickle of these opcodes, STOP added. */
const pickle4 = (...pieces: (string | Buffer)[]) => raw("\x80\x04", ...pieces, ".");
const u32 = (value: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value);
  return bytes;
};

/** The refusal `bytes` get, its message whole. */
function refusal(bytes: Buffer): string {
  try {
    readSnapshotPickle(bytes);
  } catch (error) {
    expect(error).toBeInstanceOf(PickleRefusal);
    return (error as Error).message;
  }
  throw new Error("the pickle was read");
}

describe("the values of a snapshot", () => {
  it("reads dicts as Maps, lists and tuples as arrays, integers to 8 bytes, strings, floats, constants", () => {
    const value = readSnapshotPickle(
      pickle4(
        "}\x94(",
        "\x8c\x04list\x94](K\x01M\x00\x01J\xff\xff\xff\xffe",
        "\x8c\x04long\x94\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80",
        "\x8c\x05small\x8a\x06\x00\x00\x00\x00\x00\x7f",
        "\x8c\x04none\x94N\x8c\x01t\x88\x8c\x01f\x89",
        "\x8c\x05float\x47\x3f\xf8\x00\x00\x00\x00\x00\x00",
        "\x8c\x05tuple\x94)K\x02\x85\x86",
        "\x8c\x05\xc3\xa9t\xc3\xa9h\x01",
        "u",
      ),
    );
    expect(value).toBeInstanceOf(PickleDict);
    expect([...(value as Map<unknown, unknown>)]).toEqual([
      ["list", [1, 256, -1]],
      ["long", -(2n ** 63n)],
      ["small", 0x7f0000000000],
      ["none", null],
      ["t", true],
      ["f", false],
      ["float", 1.5],
      ["tuple", [[], [2]]],
      ["été", "list"],
    ]);
    expect((value as Map<string, unknown>).get("list")).toBeInstanceOf(PickleList);
  });

  it("keeps a key named __proto__ as data, and no prototype changes", () => {
    const value = readSnapshotPickle(pickle4("}\x8c\x09__proto__}\x8c\x07polluts\x88ss")) as Map<
      string,
      Map<string, unknown>
    >;
    expect(value.get("__proto__")?.get("polluts")).toBe(true);
    expect(Object.getPrototypeOf(value)).toBe(PickleDict.prototype);
    expect(({} as { polluts?: unknown }).polluts).toBeUndefined();
  });

  it("reads the memo by MEMOIZE, BINPUT and LONG_BINPUT, and a FRAME that tells the truth", () => {
    const value = readSnapshotPickle(
      raw("\x80\x03\x95\x0e\x00\x00\x00\x00\x00\x00\x00](K\x07q\x00h\x00r", u32(1), "j", u32(1), "e."),
    );
    expect(value).toEqual([7, 7, 7]);
  });
});

describe("refused, with where", () => {
  const proto = "\x80\x04";
  it.each<[string, Buffer, string]>([
    [
      "BUILD (a __setstate__)",
      pickle4("}}b"),
      "the opcode 0x62 'b' (BUILD), which a memory snapshot never holds at byte 4",
    ],
    [
      "BUILD setting __proto__",
      pickle4("}}\x8c\x09__proto__}sb"),
      "the opcode 0x62 'b' (BUILD), which a memory snapshot never holds at byte 17",
    ],
    [
      "a protocol-0 DICT",
      pickle4("(d"),
      "the opcode 0x64 'd' (DICT), which a memory snapshot never holds at byte 3",
    ],
    [
      "LONG4",
      pickle4("\x8b\x00\x00\x01\x00"),
      "the opcode 0x8b (LONG4), which a memory snapshot never holds at byte 2",
    ],
    [
      "a LONG1 of 9 bytes",
      pickle4("\x8a\x09"),
      "an integer of 9 bytes (a snapshot's integers fit 8 bytes) at byte 2",
    ],
    [
      "BINBYTES",
      pickle4("B\x01\x00\x00\x00x"),
      "the opcode 0x42 'B' (BINBYTES), which a memory snapshot never holds at byte 2",
    ],
    [
      "BINUNICODE8",
      pickle4("\x8d"),
      "the opcode 0x8d (BINUNICODE8), which a memory snapshot never holds at byte 2",
    ],
    [
      "EMPTY_SET",
      pickle4("\x8f"),
      "the opcode 0x8f (EMPTY_SET), which a memory snapshot never holds at byte 2",
    ],
    ["NEWOBJ", pickle4(")\x81"), "the opcode 0x81 (NEWOBJ), which a memory snapshot never holds at byte 3"],
    ["an unknown opcode", pickle4("\xff"), "the opcode 0xff, which a memory snapshot never holds at byte 2"],
    [
      "a huge BINUNICODE length",
      pickle4("X\xf0\xff\xff\xffab"),
      "a string of 4294967280 bytes (a snapshot's strings are under 65536) at byte 2",
    ],
    [
      "a BINUNICODE past the end",
      raw(proto, "X\x10\x00\x00\x00ab"),
      "the pickle ends inside an opcode (16 bytes needed, 2 left) at byte 2",
    ],
    [
      "a LONG_BINGET of an unset entry",
      pickle4("j\x00\x00\x00\x10"),
      "a memo reference to entry 268435456, which is unset at byte 2",
    ],
    [
      "a BINGET of an unset entry",
      pickle4("N\x94h\x01"),
      "a memo reference to entry 1, which is unset at byte 4",
    ],
    [
      "a LONG_BINPUT far past the memo",
      pickle4("Nr\xff\xff\xff\xff"),
      "a memo entry 4294967295 past the memo's end (0) at byte 3",
    ],
    ["a MEMOIZE of an empty stack", pickle4("\x94"), "an opcode uses an item of an empty stack at byte 2"],
    [
      "a FRAME that claims more than is left",
      raw(proto, "\x95\x00\x00\x00\x00\x01\x00\x00\x00N."),
      "a FRAME of 4294967296 bytes, past the pickle's end at byte 2",
    ],
    ["a GLOBAL", pickle4("cos\nsystem\n"), "refused the global os.system at byte 2"],
    [
      "STACK_GLOBAL",
      pickle4("\x8c\x08builtins\x8c\x04eval\x93"),
      "refused the global builtins.eval at byte 18",
    ],
    [
      "a GLOBAL name without its end",
      pickle4(`c${"x".repeat(300)}`),
      "a global's name that does not end within 256 bytes at byte 2",
    ],
    [
      "a REDUCE of a list",
      pickle4("])R"),
      "a REDUCE of something that is not collections.OrderedDict at byte 4",
    ],
    [
      "OrderedDict called with arguments",
      pickle4("ccollections\nOrderedDict\nK\x01\x85R"),
      "a REDUCE of OrderedDict with arguments at byte 30",
    ],
    ["PERSID", pickle4("Pweights\n"), "refused a persistent id at byte 2"],
    ["BINPERSID", pickle4("NQ"), "refused a persistent id at byte 3"],
    ["EXT1", pickle4("\x82\x01"), "refused an extension code at byte 2"],
    ["APPEND onto a dict", pickle4("}Na"), "APPEND onto a dict at byte 4"],
    [
      "SETITEM onto a tuple",
      pickle4(")NNs"),
      "SETITEM onto a container already nested in another (or a tuple) at byte 5",
    ],
    ["APPENDS onto a number", pickle4("K\x01(e"), "APPENDS onto something that is not a container at byte 5"],
    [
      "a list changed after it is nested",
      pickle4("]]\x94ah\x00Na"),
      "APPEND onto a container already nested in another (or a tuple) at byte 9",
    ],
    ["a list put into itself", pickle4("]\x94h\x00a"), "a container put into itself at byte 6"],
    ["APPENDS onto a dict", pickle4("}(Ne"), "APPENDS onto a dict at byte 5"],
    ["SETITEMS of an odd count", pickle4("}(Nu"), "SETITEMS of an odd number of items at byte 5"],
    ["APPENDS without a mark", pickle4("]e"), "an opcode that needs a mark, with none set at byte 3"],
    ["an item taken across a mark", pickle4("](a"), "an opcode takes an item from an empty stack at byte 4"],
    [
      "a second PROTO",
      pickle4("\x80\x04"),
      "a PROTO opcode that is not protocol 2 to 5 at the start at byte 2",
    ],
    ["STOP with two items", pickle4("NN"), "a STOP with other than one item on the stack at byte 4"],
    ["STOP with a mark open", pickle4("N("), "a STOP with other than one item on the stack at byte 4"],
    ["no STOP", raw(proto, "N"), "the pickle ends before its STOP opcode at byte 3"],
    ["an INST", pickle4("ios\nsystem\n"), "refused the global os.system at byte 2"],
    [
      "an INST of OrderedDict",
      pickle4("icollections\nOrderedDict\n"),
      "an INST opcode (a snapshot makes no instances) at byte 2",
    ],
  ])("%s", (_name, bytes, message) => {
    expect(refusal(bytes)).toBe(message);
  });
});

describe("the budgets", () => {
  it(`refuses more than ${MAX_MARKS} marks open and more than ${MAX_STACK} items on the stack`, () => {
    expect(refusal(pickle4("(".repeat(10_000_000)))).toBe(`more than 64 marks open at byte ${2 + MAX_MARKS}`);
    expect(refusal(pickle4("](", "N".repeat(400_000), "e"))).toBe(
      `more than 65536 items on the stack at byte ${4 + MAX_STACK - 1}`,
    );
    // Four million memo references in a few bytes each: the stack limit ends it at once.
    expect(refusal(pickle4("]\x94(", "h\x00".repeat(4_000_000), "e"))).toBe(
      `more than 65536 items on the stack at byte ${5 + 2 * (MAX_STACK - 1)}`,
    );
  });

  it(`refuses containers nested more than ${MAX_DEPTH} deep, however the stack is kept short`, () => {
    // A root list; then, level by level, a new list holding the last one (by the memo), put into the root.
    const level = (index: number) => raw("]j", u32(index), "a\x94a");
    const levels = (count: number) => Array.from({ length: count }, (_, index) => level(index));
    const deepest = readSnapshotPickle(pickle4("]]\x94a", ...levels(MAX_DEPTH - 2))) as unknown[];
    expect(deepest).toHaveLength(MAX_DEPTH - 1);
    const refused = refusal(pickle4("]]\x94a", ...levels(MAX_DEPTH - 1)));
    // Refused at the last level's APPEND into the root (each level is 9 bytes, from byte 6).
    expect(refused).toBe(`containers nested more than 64 deep at byte ${6 + (MAX_DEPTH - 2) * 9 + 8}`);
  });

  it("refuses a pickle of empty dicts past its memory budget, in proportion to its length", () => {
    // A list of a million empty dicts, two bytes each (EMPTY_DICT, APPEND).
    const bytes = raw("\x80\x04]", "}a".repeat(1_000_000));
    const budget = HEAP_BYTES_FLOOR + HEAP_BYTES_PER_INPUT_BYTE * bytes.length;
    // The estimate: a list 96 bytes, a dict 208, an item of a list 12; refused at the opcode that passes it.
    let heap = 96;
    let at = 3;
    for (;;) {
      heap += 208;
      if (heap > budget) break;
      heap += 12;
      if (heap > budget) break;
      at += 2;
    }
    expect(refusal(bytes)).toBe(
      `more values than a snapshot of ${bytes.length} bytes holds (over ${budget} bytes of memory: 24 a byte of pickle) at byte ${at}`,
    );
  });

  it("refuses past half the heap limit, whatever the input's length", () => {
    const bytes = raw("\x80\x04]", "}a".repeat(1_000_000));
    const heapLimit = 64 * 1024 * 1024;
    // As above, against half the limit: a list 96 bytes, a dict 208, an item of a list 12.
    let heap = 96;
    let at = 3;
    for (;;) {
      heap += 208;
      if (heap > heapLimit / 2) break;
      heap += 12;
      if (heap > heapLimit / 2) break;
      at += 2;
    }
    expect(() => readSnapshotPickle(bytes, { heapLimit })).toThrow(
      new PickleRefusal(
        `more values than this process can hold (over 33554432 bytes of memory: half its heap limit) at byte ${at}`,
      ),
    );
  });

  it("reads in time linear in the input: 2 MiB of each costly opcode in seconds, not hours", () => {
    /** A root list, then `batch` appended `count` times, 1,000 items a batch (Python's pickler batches so). */
    const batches = (item: string, count: number) =>
      raw("\x80\x04]N\x94\x8c\x01k\x94", `(${item.repeat(1000)}e`.repeat(count), ".");
    const costly = [
      raw("\x80\x04]", "}a".repeat(2 ** 20)), // empty dicts, to the memory budget
      batches("h\x00", 1000), // memo references
      batches("\x8a\x08\x01\x02\x03\x04\x05\x06\x07\x88", 200), // 8-byte integers, bigints
      batches(`\x8c\xff${"x".repeat(255)}`, 8), // the longest short strings
      batches("}(h\x01h\x00u", 200), // dicts of one memo key each
    ];
    for (const bytes of costly) {
      const started = performance.now();
      try {
        readSnapshotPickle(bytes);
      } catch (error) {
        expect(error).toBeInstanceOf(PickleRefusal);
      }
      // A quadratic step would take hours here; linear, well under a second on an idle machine.
      expect(performance.now() - started).toBeLessThan(5000);
    }
  });
});
