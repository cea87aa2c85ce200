// A writer of Python pickles (protocol 2) for plain data: dicts with text keys, lists, text, integers,
// floats, booleans and None. What a PyTorch memory snapshot is made of, and nothing that runs code when it
// is loaded: no globals, no reduce, no persistent ids. The counterpart of snapshot-pickle.ts, which reads
// exactly these opcodes (and refuses the rest).

/** A value the writer can write: what `pickle.loads` gives back as dicts, lists, str, int, float, bool, None. */
export type PickleValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | PickleValue[]
  | { readonly [key: string]: PickleValue };

const PROTO = 0x80;
const STOP = 0x2e;
const NONE = 0x4e;
const NEWTRUE = 0x88;
const NEWFALSE = 0x89;
const BININT = 0x4a;
const BININT1 = 0x4b;
const BININT2 = 0x4d;
const LONG1 = 0x8a;
const BINFLOAT = 0x47;
const BINUNICODE = 0x58;
const EMPTY_LIST = 0x5d;
const EMPTY_DICT = 0x7d;
const MARK = 0x28;
const APPENDS = 0x65;
const SETITEMS = 0x75;
// Python's pickler batches appends and set items by a thousand: the reader's stack stays short.
const BATCH = 1000;

/** Grows a byte buffer as it is written. */
class Bytes {
  #buffer = Buffer.alloc(64 * 1024);
  length = 0;

  #room(bytes: number): void {
    if (this.length + bytes <= this.#buffer.length) return;
    let size = this.#buffer.length * 2;
    while (size < this.length + bytes) size *= 2;
    const grown = Buffer.alloc(size);
    this.#buffer.copy(grown, 0, 0, this.length);
    this.#buffer = grown;
  }

  byte(value: number): void {
    this.#room(1);
    this.#buffer[this.length++] = value;
  }

  int32(value: number): void {
    this.#room(4);
    this.#buffer.writeInt32LE(value, this.length);
    this.length += 4;
  }

  uint16(value: number): void {
    this.#room(2);
    this.#buffer.writeUInt16LE(value, this.length);
    this.length += 2;
  }

  float(value: number): void {
    this.#room(8);
    this.#buffer.writeDoubleBE(value, this.length);
    this.length += 8;
  }

  raw(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.#buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  done(): Buffer {
    return this.#buffer.subarray(0, this.length);
  }
}

/** An integer as LONG1: little-endian two's complement, as few bytes as hold it with its sign. */
function writeLong(out: Bytes, value: bigint): void {
  const bytes: number[] = [];
  let rest = value;
  for (;;) {
    const byte = Number(rest & 0xffn);
    bytes.push(byte);
    rest >>= 8n;
    if ((rest === 0n && (byte & 0x80) === 0) || (rest === -1n && (byte & 0x80) !== 0)) break;
  }
  out.byte(LONG1);
  out.byte(bytes.length);
  out.raw(Uint8Array.from(bytes));
}

function write(out: Bytes, value: PickleValue): void {
  if (value === null) out.byte(NONE);
  else if (value === true) out.byte(NEWTRUE);
  else if (value === false) out.byte(NEWFALSE);
  else if (typeof value === "bigint") writeLong(out, value);
  else if (typeof value === "number") {
    if (!Number.isInteger(value)) {
      out.byte(BINFLOAT);
      out.float(value);
    } else if (value >= 0 && value < 256) {
      out.byte(BININT1);
      out.byte(value);
    } else if (value >= 0 && value < 65536) {
      out.byte(BININT2);
      out.uint16(value);
    } else if (value >= -(2 ** 31) && value < 2 ** 31) {
      out.byte(BININT);
      out.int32(value);
    } else if (Number.isSafeInteger(value)) writeLong(out, BigInt(value));
    else throw new RangeError(`pickle: ${value} is not a safe integer`);
  } else if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    out.byte(BINUNICODE);
    out.int32(bytes.length);
    out.raw(bytes);
  } else if (Array.isArray(value)) {
    out.byte(EMPTY_LIST);
    for (let start = 0; start < value.length; start += BATCH) {
      out.byte(MARK);
      const end = Math.min(value.length, start + BATCH);
      for (let index = start; index < end; index += 1) write(out, value[index] as PickleValue);
      out.byte(APPENDS);
    }
  } else {
    out.byte(EMPTY_DICT);
    const keys = Object.keys(value);
    for (let start = 0; start < keys.length; start += BATCH) {
      out.byte(MARK);
      const end = Math.min(keys.length, start + BATCH);
      for (let index = start; index < end; index += 1) {
        const key = keys[index] as string;
        write(out, key);
        write(out, value[key] as PickleValue);
      }
      out.byte(SETITEMS);
    }
  }
}

/** `value` as a protocol-2 pickle (`pickle.loads` reads it back as the same plain data). */
export function writePickle(value: PickleValue): Uint8Array {
  const out = new PickleStream();
  out.value(value);
  return out.done();
}

/**
 * A pickle written piece by piece, for data too long to build as one value first (a snapshot's trace): open
 * a list or dict, `mark`, write its items, then `appends` (a list) or `setItems` (a dict, keys and values in
 * turn). Keep each batch between `mark` and its end to about a thousand items, as Python's pickler does.
 */
export class PickleStream {
  readonly #out = new Bytes();

  /** A stream that starts with protocol 2's header. */
  constructor() {
    this.#out.byte(PROTO);
    this.#out.byte(2);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.#out.length;
  }

  /** One whole value. */
  value(value: PickleValue): void {
    write(this.#out, value);
  }

  emptyList(): void {
    this.#out.byte(EMPTY_LIST);
  }

  emptyDict(): void {
    this.#out.byte(EMPTY_DICT);
  }

  mark(): void {
    this.#out.byte(MARK);
  }

  /** Appends what was written since the last mark to the list below it. */
  appends(): void {
    this.#out.byte(APPENDS);
  }

  /** Sets the keys and values written since the last mark in the dict below it. */
  setItems(): void {
    this.#out.byte(SETITEMS);
  }

  /** The pickle, ended with STOP. */
  done(): Uint8Array {
    this.#out.byte(STOP);
    return this.#out.done();
  }
}
