// What a trace's replay keeps per id, built to take any id a trace can hold (any non-negative safe integer)
// and any number of them, in memory bounded by what the trace keeps live rather than by its length.
//
// A JavaScript Map or Set holds at most 2^24 entries (V8 throws a RangeError past that), so one Map cannot
// index the ids of a long trace: `TraceIdMap` spreads its entries over as many Maps as it needs. The ids a
// trace has used (to refuse a reused id) are not kept one by one: trace writers give ids out in order, so
// `UsedTraceIds` keeps one interval of used ids and a bitmap only for ids outside it.

/** Entries per Map of a {@link TraceIdMap}: below V8's limit of 2^24, with room to spare. */
const PART_CAPACITY = 2 ** 23;

/**
 * A map from trace ids (non-negative safe integers) to values, with no limit on its size but memory: its
 * entries are spread over Maps of at most `partCapacity` entries each (one Map until that many are live).
 * Used for what a replay keeps per live id; the replay CLI keeps its handles in one too.
 */
export class TraceIdMap<V> {
  readonly #parts: Map<number, V>[] = [new Map()];
  readonly #partCapacity: number;
  #size = 0;

  /** `partCapacity` (entries per Map) is for tests; the default stays below V8's Map limit. */
  constructor(partCapacity: number = PART_CAPACITY) {
    this.#partCapacity = partCapacity;
  }

  /** Entries held. */
  get size(): number {
    return this.#size;
  }

  /** The value of `id`, or `undefined`. */
  get(id: number): V | undefined {
    const parts = this.#parts;
    if (parts.length === 1) return (parts[0] as Map<number, V>).get(id);
    for (const part of parts) {
      const value = part.get(id);
      if (value !== undefined || part.has(id)) return value;
    }
    return undefined;
  }

  /** Whether `id` has an entry. */
  has(id: number): boolean {
    for (const part of this.#parts) if (part.has(id)) return true;
    return false;
  }

  /** Sets the value of `id`. */
  set(id: number, value: V): void {
    const parts = this.#parts;
    if (parts.length === 1) {
      const part = parts[0] as Map<number, V>;
      const before = part.size;
      if (before < this.#partCapacity || part.has(id)) {
        part.set(id, value);
        this.#size += part.size - before;
        return;
      }
    }
    for (const part of parts) {
      if (part.has(id)) {
        part.set(id, value);
        return;
      }
    }
    let room = parts.find((part) => part.size < this.#partCapacity);
    if (room === undefined) {
      room = new Map();
      parts.push(room);
    }
    room.set(id, value);
    this.#size += 1;
  }

  /** Removes `id`'s entry; whether there was one. */
  delete(id: number): boolean {
    const parts = this.#parts;
    for (let index = 0; index < parts.length; index += 1) {
      const part = parts[index] as Map<number, V>;
      if (!part.delete(id)) continue;
      this.#size -= 1;
      // An emptied Map goes (but the last one stays), so lookups after a peak of live ids cost one Map again.
      if (part.size === 0 && parts.length > 1) parts.splice(index, 1);
      return true;
    }
    return false;
  }

  /** Every value, in no particular order. */
  *values(): IterableIterator<V> {
    for (const part of this.#parts) yield* part.values();
  }
}

/** Ids per bitmap chunk of {@link UsedTraceIds}: 1024 ids in 32 words. */
const CHUNK_IDS = 1024;
const CHUNK_WORDS = CHUNK_IDS / 32;

/**
 * The set of ids a trace has used, for any id a trace can hold. One interval `[low, high)` holds the ids
 * given out in order (what every trace writer does: the whole set, in a few bytes, however long the trace);
 * an id outside it is a bit in a 128-byte chunk of 1024 ids, taken back into the interval when the interval
 * reaches it. Memory: constant for ids in order, about one bit per id (a chunk per 1024) for ids out of order.
 */
export class UsedTraceIds {
  #low = 0;
  #high = 0;
  readonly #outside = new TraceIdMap<Uint32Array>();
  #outsideCount = 0;

  /** Whether `id` was added. */
  has(id: number): boolean {
    if (id < this.#high && id >= this.#low) return true;
    if (this.#outsideCount === 0) return false;
    const chunk = this.#outside.get(Math.floor(id / CHUNK_IDS));
    if (chunk === undefined) return false;
    const bit = id % CHUNK_IDS;
    return ((chunk[bit >>> 5] as number) & (1 << (bit & 31))) !== 0;
  }

  /** Adds `id` unless it was added before; whether it was new ({@link has} and {@link add} in one). */
  addIfNew(id: number): boolean {
    // The next id in order (nearly every allocation of a trace): one comparison.
    if (id === this.#high && this.#outsideCount === 0 && this.#low !== this.#high) {
      this.#high = id + 1;
      return true;
    }
    if (this.has(id)) return false;
    this.add(id);
    return true;
  }

  /** Adds `id` (one not added before: the caller checks with {@link has}). */
  add(id: number): void {
    if (id === this.#high && this.#low !== this.#high) {
      this.#high = id + 1;
      if (this.#outsideCount > 0) while (this.#take(this.#high)) this.#high += 1;
    } else if (id === this.#low - 1) {
      this.#low = id;
      if (this.#outsideCount > 0) while (this.#low > 0 && this.#take(this.#low - 1)) this.#low -= 1;
    } else if (this.#low === this.#high && this.#outsideCount === 0) {
      this.#low = id;
      this.#high = id + 1;
    } else {
      const key = Math.floor(id / CHUNK_IDS);
      let chunk = this.#outside.get(key);
      if (chunk === undefined) {
        chunk = new Uint32Array(CHUNK_WORDS);
        this.#outside.set(key, chunk);
      }
      const bit = id % CHUNK_IDS;
      chunk[bit >>> 5] = (chunk[bit >>> 5] as number) | (1 << (bit & 31));
      this.#outsideCount += 1;
    }
  }

  /** Ids held outside the interval (for tests: zero for ids given out in order). */
  get outside(): number {
    return this.#outsideCount;
  }

  /** Removes `id` from the bitmap if it is there; whether it was. */
  #take(id: number): boolean {
    const key = Math.floor(id / CHUNK_IDS);
    const chunk = this.#outside.get(key);
    if (chunk === undefined) return false;
    const bit = id % CHUNK_IDS;
    const word = bit >>> 5;
    const mask = 1 << (bit & 31);
    if (((chunk[word] as number) & mask) === 0) return false;
    chunk[word] = (chunk[word] as number) & ~mask;
    this.#outsideCount -= 1;
    if (chunk.every((bits) => bits === 0)) this.#outside.delete(key);
    return true;
  }
}
