// What the snapshot pickle reader (snapshot-pickle.ts) makes and what it allows: its refusal, its budgets,
// the heap bytes each value is estimated to take, the two containers it makes, and the names of the opcodes
// it refuses. Apart from the reader so that the limits and costs read as one table, and the tests and the
// snapshot loader can name them without the opcode loop.

/** A refusal of the reader: the caller turns it into its typed error. */
export class PickleRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PickleRefusal";
  }
}

/** The values' estimated heap bytes allowed per byte of pickle, and the floor under it. */
export const HEAP_BYTES_PER_INPUT_BYTE = 24;
export const HEAP_BYTES_FLOOR = 32 * 1024 * 1024;
/**
 * The share of the process's heap limit the values may take whatever the input's length (the rest is for what
 * the caller makes of them): past it a pickle is refused, not read until V8 aborts the process.
 */
export const HEAP_LIMIT_SHARE = 0.5;
/** The longest string (in UTF-8 bytes) a snapshot holds: a frame's name or file name. */
export const MAX_STRING_BYTES = 64 * 1024;
/** Stack items at once (Python's pickler batches lists and dicts 1,000 items at a time). */
export const MAX_STACK = 1 << 16;
/** Marks open at once, and containers nested in containers (a real snapshot: 7 of each). */
export const MAX_MARKS = 64;
export const MAX_DEPTH = 64;

// What each value is estimated to take on V8's heap (measured: an empty Map subclass 200 bytes, an empty
// Array subclass 94, a Map entry about 43, a one-byte string 16 bytes and its characters).
/** The estimated heap bytes of a dict. */
export const COST_DICT = 208;
/** The estimated heap bytes of a list or tuple. */
export const COST_LIST = 96;
/** The estimated heap bytes of a dict's entry. */
export const COST_DICT_ENTRY = 48;
/** The estimated heap bytes of a list's item. */
export const COST_LIST_ITEM = 12;
/** The estimated heap bytes of a string, besides its characters. */
export const COST_STRING = 24;
/** The estimated heap bytes of a number a LONG1 or BINFLOAT opcode makes (a bigint past 2^53). */
export const COST_NUMBER = 16;
/** The estimated heap bytes of a memo slot. */
export const COST_SLOT = 8;

/**
 * A container's state: its nesting depth (1: holds no container), negative once it is sealed. A container is
 * sealed when it is put into another: Python's pickler completes every container before nesting it, so a
 * sealed one never changes again and its depth stays true (and no container can hold itself).
 */
export class PickleDict extends Map<unknown, unknown> {
  #state = 1;
  get state(): number {
    return this.#state;
  }
  set state(state: number) {
    this.#state = state;
  }
}
/** A list or tuple of the pickle, with its container state (see {@link PickleDict}). */
export class PickleList extends Array<unknown> {
  #state = 1;
  get state(): number {
    return this.#state;
  }
  set state(state: number) {
    this.#state = state;
  }
}
/** Either container the reader makes. */
export type Container = PickleDict | PickleList;

/** `collections.OrderedDict`, the one global a snapshot may name (a REDUCE of it makes a dict). */
export const ORDERED_DICT = Object.freeze({ global: "collections.OrderedDict" });

/** Opcodes a snapshot never holds, by name, for the refusal's message. */
export const NAMES: Record<number, string> = {
  48: "POP",
  49: "POP_MARK",
  50: "DUP",
  70: "FLOAT",
  73: "INT",
  76: "LONG",
  83: "STRING",
  84: "BINSTRING",
  85: "SHORT_BINSTRING",
  86: "UNICODE",
  98: "BUILD",
  100: "DICT",
  103: "GET",
  108: "LIST",
  111: "OBJ",
  112: "PUT",
  129: "NEWOBJ",
  139: "LONG4",
  141: "BINUNICODE8",
  142: "BINBYTES8",
  143: "EMPTY_SET",
  144: "ADDITEMS",
  145: "FROZENSET",
  146: "NEWOBJ_EX",
  150: "BYTEARRAY8",
  151: "NEXT_BUFFER",
  152: "READONLY_BUFFER",
  66: "BINBYTES",
  67: "SHORT_BINBYTES",
};
