// What the cache of the size-class policies (buffer-cache.ts) and the free blocks of the segments policy
// (free-blocks.ts) both keep: the distinct lengths in a sorted typed array, one bucket each, and a bit set of
// the non-empty buckets, so the smallest non-empty length in a window is a binary search and a few bit
// operations away.

/** Empty buckets are kept (a length that comes back is cheap) until they are this many and half of all. */
export const COMPACT_AT_EMPTY = 64;

/** The position of the lowest set bit of a 32-bit word that has one. */
export function lowestSetBit(bits: number): number {
  return 31 - Math.clz32(bits & -bits);
}

/** The first position in the sorted `keys[0, count)` whose key is at least `key` (`count` when none is). */
export function lowerBound(keys: Float64Array, count: number, key: number): number {
  let low = 0;
  let high = count;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle]! < key) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The first position from `from` whose bit is set in `marks` and whose key is below `limit`, or -1. */
export function firstMarked(
  marks: Int32Array,
  keys: Float64Array,
  count: number,
  from: number,
  limit: number,
): number {
  if (from >= count || keys[from]! >= limit) return -1;
  let word = from >>> 5;
  let bits = marks[word]! & (-1 << (from & 31));
  while (bits === 0) {
    word++;
    const first = word << 5;
    if (first >= count || keys[first]! >= limit) return -1;
    bits = marks[word]!;
  }
  const index = (word << 5) + lowestSetBit(bits);
  return index < count && keys[index]! < limit ? index : -1;
}

/**
 * `keys` when it has room for one more key after `count`, else a copy twice as long (`initial` long when
 * `keys` is empty).
 */
export function withRoom(
  keys: Float64Array<ArrayBuffer>,
  count: number,
  initial = 8,
): Float64Array<ArrayBuffer> {
  if (count < keys.length) return keys;
  const grown = new Float64Array(keys.length === 0 ? initial : keys.length * 2);
  grown.set(keys);
  return grown;
}
