import { describe, expect, it } from "vitest";
import { BufferCache } from "./buffer-cache.js";
import { CachedBuffer } from "./cached-buffer.js";

function makeCache() {
  const released: number[] = [];
  const cache = new BufferCache<number>((record) => released.push(record.buffer));
  const owner = {};
  let serial = 0;
  const put = (length: number) => {
    const record = new CachedBuffer(serial++, length, owner);
    cache.put(record);
    return record;
  };
  /** Caches buffers of these lengths, numbered 0, 1, … in this order (the first the least recent). */
  const putAll = (...lengths: number[]) => lengths.map(put);
  return { cache, released, put, putAll };
}

describe("BufferCache (MLX's buffer_cache.h)", () => {
  it("finds the smallest cached length in [minimum, limit), oldest of that length first", () => {
    const { cache, putAll } = makeCache();
    const [, first640, second640] = putAll(768, 640, 640, 1024);
    const index = cache.find(512, 1024);
    expect(cache.lengthAt(index)).toBe(640);
    expect(cache.takeAt(index)).toBe(first640);
    expect(cache.takeAt(cache.find(512, 1024))).toBe(second640);
    expect(cache.lengthAt(cache.find(512, 1024))).toBe(768);
    expect(cache.find(1025, 4096)).toBe(-1);
    expect(cache.find(512, 768)).toBe(-1); // the limit is exclusive
    expect(cache.bytes).toBe(768 + 1024);
    expect(cache.buffers).toBe(2);
  });

  it("finds exact lengths up to 4 MiB and beyond as its index grows to reach them", () => {
    const { cache, putAll } = makeCache();
    // 64 KiB (slot 256, past the first 256 slots), 4 MiB (the last indexed slot), 4 MiB + 256 (a Map's).
    const [small, grown, last, beyond] = putAll(256, 65536, 4 * 1024 * 1024, 4 * 1024 * 1024 + 256);
    expect(cache.takeAt(cache.find(4 * 1024 * 1024, 4 * 1024 * 1024 + 1))).toBe(last);
    expect(cache.takeAt(cache.find(65536, 65537))).toBe(grown);
    expect(cache.takeAt(cache.find(256, 257))).toBe(small);
    expect(cache.takeAt(cache.find(4 * 1024 * 1024 + 256, 4 * 1024 * 1024 + 257))).toBe(beyond);
    expect(cache.buffers).toBe(0);
    // Cleared and cached again: the grown index holds the new positions, nothing of the old ones.
    cache.clear();
    const [again] = putAll(131072, 512);
    expect(cache.find(65536, 65537)).toBe(-1);
    expect(cache.lengthAt(cache.find(65536, 131073))).toBe(131072);
    expect(cache.takeAt(cache.find(131072, 131073))).toBe(again);
    expect(cache.snapshot()).toEqual([512]);
    // Two buffers of a length past the first slots share one queue: the older is taken first.
    const [older, newer] = putAll(1 << 20, 1 << 20);
    expect(cache.takeAt(cache.find(1 << 20, (1 << 20) + 1))).toBe(older);
    expect(cache.takeAt(cache.find(1 << 20, (1 << 20) + 1))).toBe(newer);
  });

  it("finds each exact length the same before and after its index is made (at the 16th distinct length)", () => {
    const { cache, putAll } = makeCache();
    const MiB = 1024 * 1024;
    // Slot lengths of three chunks and lengths with no slot (past 16 MiB, or not a size class): a Map's.
    const lengths = [256, 512, 16384, 65536, MiB, 4 * MiB, 4 * MiB + 256, 20 * MiB, 5000, 3 * MiB];
    for (let extra = 0; lengths.length < 15; extra++) lengths.push(2 * MiB + 16384 * (extra + 1));
    const check = (records: CachedBuffer<number>[], cached: readonly number[]) => {
      for (const [index, length] of cached.entries()) {
        expect(cache.lengthAt(cache.find(length, length + 1))).toBe(length);
        expect(cache.takeAt(cache.find(length, length + 1))).toBe(records[index]);
        expect(cache.find(length, length + 1)).toBe(-1);
      }
    };
    check(putAll(...lengths), lengths); // 15 lengths: found by search
    const all = [...lengths, 40 * MiB]; // the 16th: every queue indexed from here on
    check(putAll(...all), all);
    check(putAll(...all.reverse()), all);
    // Two buffers of one length share its queue, the older taken first, a Map's length as a slot's.
    for (const length of [20 * MiB, 4 * MiB + 256, 5000, 65536]) {
      const [older, newer] = putAll(length, length);
      expect(cache.takeAt(cache.find(length, length + 1))).toBe(older);
      expect(cache.takeAt(cache.find(length, length + 1))).toBe(newer);
    }
    expect(cache.buffers).toBe(0);
    cache.clear();
    const after = [20 * MiB, 256, 4 * MiB + 256];
    check(putAll(...after), after);
    expect(cache.find(5000, 5001)).toBe(-1);
  });

  it("release(n) frees least recently cached buffers until n bytes are freed", () => {
    const { cache, released, putAll } = makeCache();
    putAll(1000, 300, 200, 500);
    expect(cache.release(1100)).toBe(2); // 1000 + 300 ≥ 1100; 1100 < 0.9·2000
    expect(released).toEqual([0, 1]);
    expect(cache.bytes).toBe(700);
    expect(cache.lruSnapshot()).toEqual([200, 500]);
  });

  it("release(n) clears the whole cache when n is at least 90% of it", () => {
    const { cache, released, putAll } = makeCache();
    putAll(9000, 1000); // the oldest alone would cover n
    expect(cache.release(9000)).toBe(2); // 9000 ≥ 0.9·10000
    expect(released).toEqual([0, 1]);
    expect(cache.bytes).toBe(0);
    const again = makeCache();
    again.putAll(9000, 1000);
    expect(again.cache.release(8999)).toBe(1); // 8999 < 9000: only the oldest
    expect(again.cache.bytes).toBe(1000);
  });

  it("release(0) of a non-empty cache releases nothing", () => {
    const { cache, put } = makeCache();
    put(256);
    expect(cache.release(0)).toBe(0);
    expect(cache.buffers).toBe(1);
  });

  it("releaseLargest() releases the oldest buffer of the largest cached length", () => {
    const { cache, released, put, putAll } = makeCache();
    putAll(512, 70000, 1024, 70000);
    cache.releaseLargest();
    expect(released).toEqual([1]);
    cache.releaseLargest();
    cache.releaseLargest();
    expect(released).toEqual([1, 3, 2]);
    expect(cache.lruSnapshot()).toEqual([512]);
    for (let length = 256; length <= 64 * 256; length += 256) put(length); // more than one bit-set word
    cache.releaseLargest();
    expect(cache.bytes).toBe(512 + (63 * 64 * 256) / 2);
  });

  it("clear() releases everything, least recently cached first", () => {
    const { cache, released, put, putAll } = makeCache();
    putAll(512, 256, 512);
    expect(cache.clear()).toBe(3);
    expect(released).toEqual([0, 1, 2]);
    expect(cache.find(0, Number.MAX_SAFE_INTEGER)).toBe(-1);
    put(256);
    expect(cache.snapshot()).toEqual([256]);
  });

  it("taking a buffer out of the middle keeps both orders (reuse order and LRU order)", () => {
    const { cache, released, putAll } = makeCache();
    putAll(256, 512, 256, 1024);
    cache.takeAt(cache.find(512, 1024)); // takes 1
    expect(cache.snapshot()).toEqual([256, 256, 1024]);
    expect(cache.lruSnapshot()).toEqual([256, 256, 1024]);
    cache.releaseOldest();
    cache.releaseOldest();
    expect(released).toEqual([0, 2]);
  });

  it("stays correct over thousands of distinct lengths (growth, compaction of empty queues)", () => {
    const { cache, put } = makeCache();
    const model: number[] = [];
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let step = 0; step < 20000; step++) {
      if (model.length > 0 && random() < 0.45) {
        const minimum = Math.floor(random() * 5000) * 256 + 256;
        const limit = minimum * 2;
        let expected = Number.POSITIVE_INFINITY;
        for (const length of model)
          if (length >= minimum && length < limit && length < expected) expected = length;
        const index = cache.find(minimum, limit);
        if (expected === Number.POSITIVE_INFINITY) {
          expect(index).toBe(-1);
        } else {
          expect(cache.lengthAt(index)).toBe(expected);
          cache.takeAt(index);
          model.splice(model.indexOf(expected), 1);
        }
      } else {
        const length = Math.floor(random() * 5000) * 256 + 256;
        put(length);
        model.push(length);
      }
    }
    expect(cache.snapshot()).toEqual([...model].sort((a, b) => a - b));
    expect(cache.bytes).toBe(model.reduce((sum, length) => sum + length, 0));
  });
});
