// A reader of the pickles PyTorch writes for a memory snapshot (`torch.cuda.memory._dump_snapshot`), and of
// nothing else. A snapshot is plain data: dicts, lists, tuples, strings, integers of at most 8 bytes, floats,
// booleans and None, and an older PyTorch's `collections.OrderedDict`. This reader knows exactly the opcodes
// Python's pickler writes for that data (protocols 2 to 5); any other opcode is refused, so no pickle can name
// a class, call anything, or set a property of an object: dicts are Maps, whatever their keys.
//
// Every cost is bounded before it is paid. The memory the values take is estimated as they are made and
// refused past a budget in proportion to the input's length, so a pickle of a million empty dicts costs what
// a real snapshot of its length would, not gigabytes: the snapshots PyTorch recorded (traces/*.pickle.gz)
// come to 9 and 10 estimated bytes per byte of pickle (about 6 measured), the hand-made one to 14, and the
// budget is {@link HEAP_BYTES_PER_INPUT_BYTE} per byte above a floor, and never more than half the process's
// heap limit (a large pickle is refused, not read until V8 aborts). Strings, the stack, marks, the nesting of
// containers and the memo have limits of their own; every opcode takes time in proportion to its own bytes or
// to the stack items it consumes, so reading is linear in the input.
// The budgets, the values' costs and the containers are in snapshot-pickle-values.ts.
import { getHeapStatistics } from "node:v8";
import {
  COST_DICT,
  COST_DICT_ENTRY,
  COST_LIST,
  COST_LIST_ITEM,
  COST_NUMBER,
  COST_SLOT,
  COST_STRING,
  type Container,
  HEAP_BYTES_FLOOR,
  HEAP_BYTES_PER_INPUT_BYTE,
  HEAP_LIMIT_SHARE,
  MAX_DEPTH,
  MAX_MARKS,
  MAX_STACK,
  MAX_STRING_BYTES,
  NAMES,
  ORDERED_DICT,
  PickleDict,
  PickleList,
  PickleRefusal,
} from "./snapshot-pickle-values.js";

export {
  HEAP_BYTES_FLOOR,
  HEAP_BYTES_PER_INPUT_BYTE,
  HEAP_LIMIT_SHARE,
  MAX_DEPTH,
  MAX_MARKS,
  MAX_STACK,
  MAX_STRING_BYTES,
  PickleDict,
  PickleList,
  PickleRefusal,
} from "./snapshot-pickle-values.js";

const decoder = new TextDecoder("utf-8");

/**
 * Reads one pickle of plain data from `bytes`: dicts become {@link PickleDict}s (Maps), lists and tuples
 * {@link PickleList}s, integers numbers (bigints past 2^53), strings, floats, booleans and `null`. The values
 * take at most half of `heapLimit` (default: this process's heap limit), whatever the input's length.
 *
 * @throws PickleRefusal for anything else: an opcode a snapshot never holds, a global but
 *   `collections.OrderedDict`, an integer longer than 8 bytes, a truncated pickle, a memo reference to an
 *   unset entry, or a pickle past any of the budgets above. Nothing else escapes: no opcode reaches an
 *   object's prototype or calls anything.
 */
export function readSnapshotPickle(bytes: Uint8Array, options: { heapLimit?: number } = {}): unknown {
  const end = bytes.length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const proportional = HEAP_BYTES_FLOOR + HEAP_BYTES_PER_INPUT_BYTE * end;
  const heapShare = Math.floor(HEAP_LIMIT_SHARE * (options.heapLimit ?? getHeapStatistics().heap_size_limit));
  const heapBudget = Math.min(proportional, heapShare);
  let heap = 0;
  let at = 0;
  let opcodeAt = 0;
  const stack: unknown[] = [];
  const marks: number[] = [];
  const memo: unknown[] = [];

  const refuse = (why: string): never => {
    throw new PickleRefusal(`${why} at byte ${opcodeAt}`);
  };
  const charge = (bytes: number) => {
    heap += bytes;
    if (heap > heapBudget) {
      refuse(
        heapBudget === proportional
          ? `more values than a snapshot of ${end} bytes holds (over ${heapBudget} bytes of memory: ${HEAP_BYTES_PER_INPUT_BYTE} a byte of pickle)`
          : `more values than this process can hold (over ${heapBudget} bytes of memory: half its heap limit)`,
      );
    }
  };
  const need = (count: number) => {
    if (count > end - at)
      refuse(`the pickle ends inside an opcode (${count} bytes needed, ${end - at} left)`);
  };
  const push = (value: unknown) => {
    if (stack.length >= MAX_STACK) refuse(`more than ${MAX_STACK} items on the stack`);
    stack.push(value);
  };
  const pop = (): unknown => {
    if (stack.length <= (marks.at(-1) ?? 0)) refuse("an opcode takes an item from an empty stack");
    return stack.pop();
  };
  const top = (): unknown => {
    if (stack.length <= (marks.at(-1) ?? 0)) refuse("an opcode uses an item of an empty stack");
    return stack[stack.length - 1];
  };
  /** The items since the last mark, the mark removed. */
  const popMark = (): unknown[] => {
    const mark = marks.pop();
    if (mark === undefined) refuse("an opcode that needs a mark, with none set");
    return stack.splice(mark as number);
  };
  /** Puts `child` into `container`: seals the child, deepens the container, within {@link MAX_DEPTH}. */
  const nest = (container: Container, child: unknown) => {
    if (child instanceof PickleDict || child instanceof PickleList) {
      if (child === container) refuse("a container put into itself");
      if (child.state > 0) child.state = -child.state;
      const depth = -child.state + 1;
      if (depth > MAX_DEPTH) refuse(`containers nested more than ${MAX_DEPTH} deep`);
      if (depth > container.state) container.state = depth;
    }
  };
  const open = (value: unknown, what: string): Container => {
    if (!(value instanceof PickleDict || value instanceof PickleList) || value.state < 0) {
      refuse(
        `${what} onto ${value instanceof PickleDict || value instanceof PickleList ? "a container already nested in another (or a tuple)" : "something that is not a container"}`,
      );
    }
    return value as Container;
  };
  const dictOf = (value: unknown, what: string): PickleDict => {
    const container = open(value, what);
    if (!(container instanceof PickleDict)) refuse(`${what} onto a list`);
    return container as PickleDict;
  };
  const listOf = (value: unknown, what: string): PickleList => {
    const container = open(value, what);
    if (!(container instanceof PickleList)) refuse(`${what} onto a dict`);
    return container as PickleList;
  };
  const setItems = (dict: PickleDict, items: unknown[]) => {
    if (items.length % 2 !== 0) refuse("SETITEMS of an odd number of items");
    for (let index = 0; index < items.length; index += 2) {
      const key = items[index];
      const value = items[index + 1];
      nest(dict, key);
      nest(dict, value);
      if (!dict.has(key)) charge(COST_DICT_ENTRY);
      dict.set(key, value);
    }
  };
  const tuple = (items: unknown[]): PickleList => {
    charge(COST_LIST + COST_LIST_ITEM * items.length);
    const made = new PickleList();
    for (const item of items) {
      nest(made, item);
      made.push(item);
    }
    made.state = -made.state; // a tuple is complete when made
    return made;
  };
  const string = (length: number): string => {
    if (length > MAX_STRING_BYTES) {
      refuse(`a string of ${length} bytes (a snapshot's strings are under ${MAX_STRING_BYTES})`);
    }
    need(length);
    charge(COST_STRING + 2 * length);
    const text = decoder.decode(bytes.subarray(at, at + length));
    at += length;
    return text;
  };
  const memoGet = (index: number) => {
    if (index >= memo.length) refuse(`a memo reference to entry ${index}, which is unset`);
    push(memo[index]);
  };
  const memoPut = (index: number) => {
    if (index > memo.length) refuse(`a memo entry ${index} past the memo's end (${memo.length})`);
    if (index === memo.length) charge(COST_SLOT);
    memo[index] = top();
  };
  /** A global's module or name: a line of a GLOBAL or INST opcode. */
  const line = (): string => {
    const stop = bytes.indexOf(0x0a, at);
    if (stop < 0 || stop - at > 256) refuse("a global's name that does not end within 256 bytes");
    const text = decoder.decode(bytes.subarray(at, stop));
    at = stop + 1;
    return text;
  };
  const global = (module: unknown, name: unknown) => {
    if (module === "collections" && name === "OrderedDict") return ORDERED_DICT;
    return refuse(`refused the global ${String(module).slice(0, 80)}.${String(name).slice(0, 80)}`);
  };

  while (true) {
    opcodeAt = at;
    if (at >= end) refuse("the pickle ends before its STOP opcode");
    const opcode = bytes[at] as number;
    at += 1;
    switch (opcode) {
      case 0x80: // PROTO
        need(1);
        if (opcodeAt !== 0 || (bytes[at] as number) < 2 || (bytes[at] as number) > 5) {
          refuse("a PROTO opcode that is not protocol 2 to 5 at the start");
        }
        at += 1;
        break;
      case 0x95: {
        // FRAME: a hint of the next opcodes' length; read through, but it may not claim more than is left.
        need(8);
        const length = view.getBigUint64(at, true);
        at += 8;
        if (length > BigInt(end - at)) refuse(`a FRAME of ${length} bytes, past the pickle's end`);
        break;
      }
      case 0x2e: // STOP
        if (marks.length > 0 || stack.length !== 1) refuse("a STOP with other than one item on the stack");
        return stack[0];
      case 0x28: // MARK
        if (marks.length >= MAX_MARKS) refuse(`more than ${MAX_MARKS} marks open`);
        marks.push(stack.length);
        break;
      case 0x7d: // EMPTY_DICT
        charge(COST_DICT);
        push(new PickleDict());
        break;
      case 0x5d: // EMPTY_LIST
        charge(COST_LIST);
        push(new PickleList());
        break;
      case 0x29: // EMPTY_TUPLE
        push(tuple([]));
        break;
      case 0x85: // TUPLE1
        push(tuple([pop()]));
        break;
      case 0x86: {
        // TUPLE2
        const second = pop();
        push(tuple([pop(), second]));
        break;
      }
      case 0x87: {
        // TUPLE3
        const third = pop();
        const second = pop();
        push(tuple([pop(), second, third]));
        break;
      }
      case 0x74: // TUPLE
        push(tuple(popMark()));
        break;
      case 0x73: {
        // SETITEM
        const value = pop();
        const key = pop();
        setItems(dictOf(top(), "SETITEM"), [key, value]);
        break;
      }
      case 0x75: {
        // SETITEMS
        const items = popMark();
        setItems(dictOf(top(), "SETITEMS"), items);
        break;
      }
      case 0x61: {
        // APPEND
        const item = pop();
        const list = listOf(top(), "APPEND");
        charge(COST_LIST_ITEM);
        nest(list, item);
        list.push(item);
        break;
      }
      case 0x65: {
        // APPENDS
        const items = popMark();
        const list = listOf(top(), "APPENDS");
        charge(COST_LIST_ITEM * items.length);
        for (const item of items) {
          nest(list, item);
          list.push(item);
        }
        break;
      }
      case 0x4a: // BININT
        need(4);
        push(view.getInt32(at, true));
        at += 4;
        break;
      case 0x4b: // BININT1
        need(1);
        push(bytes[at]);
        at += 1;
        break;
      case 0x4d: // BININT2
        need(2);
        push(view.getUint16(at, true));
        at += 2;
        break;
      case 0x8a: {
        // LONG1: a little-endian two's-complement integer of up to 8 bytes here (an address, a size).
        need(1);
        const length = bytes[at] as number;
        at += 1;
        if (length > 8) refuse(`an integer of ${length} bytes (a snapshot's integers fit 8 bytes)`);
        need(length);
        let value = 0n;
        for (let index = length - 1; index >= 0; index -= 1) {
          value = (value << 8n) | BigInt(bytes[at + index] as number);
        }
        if (length > 0 && (bytes[at + length - 1] as number) >= 0x80) value -= 1n << BigInt(8 * length);
        at += length;
        charge(COST_NUMBER);
        push(
          value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
            ? Number(value)
            : value,
        );
        break;
      }
      case 0x47: // BINFLOAT
        need(8);
        charge(COST_NUMBER);
        push(view.getFloat64(at, false));
        at += 8;
        break;
      case 0x4e: // NONE
        push(null);
        break;
      case 0x88: // NEWTRUE
        push(true);
        break;
      case 0x89: // NEWFALSE
        push(false);
        break;
      case 0x8c: // SHORT_BINUNICODE
        need(1);
        at += 1;
        push(string(bytes[at - 1] as number));
        break;
      case 0x58: // BINUNICODE
        need(4);
        at += 4;
        push(string(view.getUint32(at - 4, true)));
        break;
      case 0x94: // MEMOIZE
        memoPut(memo.length);
        break;
      case 0x71: // BINPUT
        need(1);
        at += 1;
        memoPut(bytes[at - 1] as number);
        break;
      case 0x72: // LONG_BINPUT
        need(4);
        at += 4;
        memoPut(view.getUint32(at - 4, true));
        break;
      case 0x68: // BINGET
        need(1);
        at += 1;
        memoGet(bytes[at - 1] as number);
        break;
      case 0x6a: // LONG_BINGET
        need(4);
        at += 4;
        memoGet(view.getUint32(at - 4, true));
        break;
      case 0x63: {
        // GLOBAL
        const module = line();
        push(global(module, line()));
        break;
      }
      case 0x93: {
        // STACK_GLOBAL
        const name = pop();
        push(global(pop(), name));
        break;
      }
      case 0x69: {
        // INST: a protocol-0 call, never in a snapshot.
        const module = line();
        const name = line();
        global(module, name);
        refuse("an INST opcode (a snapshot makes no instances)");
        break;
      }
      case 0x52: {
        // REDUCE: only `collections.OrderedDict()`, which makes an empty dict (its items follow as SETITEMS).
        const args = pop();
        const callable = pop();
        if (callable !== ORDERED_DICT) refuse("a REDUCE of something that is not collections.OrderedDict");
        if (!(args instanceof PickleList) || args.length !== 0)
          refuse("a REDUCE of OrderedDict with arguments");
        charge(COST_DICT);
        push(new PickleDict());
        break;
      }
      case 0x50: // PERSID
      case 0x51: // BINPERSID
        refuse("refused a persistent id");
        break;
      case 0x82: // EXT1
      case 0x83: // EXT2
      case 0x84: // EXT4
        refuse("refused an extension code");
        break;
      default: {
        const printable = opcode >= 0x21 && opcode <= 0x7e ? ` '${String.fromCharCode(opcode)}'` : "";
        const name = NAMES[opcode];
        refuse(
          `the opcode 0x${opcode.toString(16).padStart(2, "0")}${printable}${name === undefined ? "" : ` (${name})`}, which a memory snapshot never holds`,
        );
      }
    }
  }
}
