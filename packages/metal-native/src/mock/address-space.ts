// The mock's address spaces: buffers of address space with no memory (`allocatedSize` 0) and memory mapped
// into them a granule at a time, with the checks a GPU's driver makes (whole granules inside the space, no
// overlap, an unmap of exactly one earlier mapping) and one more a GPU cannot make: a range is made only over
// mapped memory, so a policy that forgets to map before handing a block out fails its tests here.
import { ArgumentError } from "@nuvec/stats";

/** The mappings of one reserved space, by offset. */
export class MockSpace {
  readonly mappings = new Map<number, number>();

  constructor(
    readonly capacity: number,
    readonly granularity: number,
  ) {}

  /** Checks a map or unmap range: whole granules inside the space. */
  checkGranules(offset: number, length: number, method: string): void {
    const granularity = this.granularity;
    if (
      !Number.isSafeInteger(offset) ||
      !Number.isSafeInteger(length) ||
      offset < 0 ||
      length <= 0 ||
      offset % granularity !== 0 ||
      length % granularity !== 0 ||
      offset + length > this.capacity
    ) {
      throw new ArgumentError(
        "length",
        `${method}(): [${offset}, +${length}) is not whole granules of ${granularity} bytes inside the ${this.capacity}-byte space`,
      );
    }
  }

  map(offset: number, length: number): void {
    this.checkGranules(offset, length, "mapMemory");
    for (const [at, size] of this.mappings) {
      if (at < offset + length && offset < at + size) {
        throw new ArgumentError(
          "offset",
          `mapMemory(): [${offset}, ${offset + length}) overlaps memory already mapped`,
        );
      }
    }
    this.mappings.set(offset, length);
  }

  unmap(offset: number, length: number): void {
    this.checkGranules(offset, length, "unmapMemory");
    if (this.mappings.get(offset) !== length) {
      throw new ArgumentError(
        "offset",
        `unmapMemory(): [${offset}, ${offset + length}) is not a range mapMemory mapped`,
      );
    }
    this.mappings.delete(offset);
  }

  /** Throws unless every byte of `[offset, offset + length)` is mapped. */
  assertBacked(offset: number, length: number): void {
    const granularity = this.granularity;
    for (let granule = Math.floor(offset / granularity); granule * granularity < offset + length; granule++) {
      const at = granule * granularity;
      let backed = false;
      for (const [start, size] of this.mappings) {
        if (start <= at && at < start + size) {
          backed = true;
          break;
        }
      }
      if (!backed) {
        throw new ArgumentError(
          "offset",
          `newBufferRange(): [${offset}, ${offset + length}) of the address space is not backed by mapped memory`,
        );
      }
    }
  }

  /** Bytes mapped now. */
  get mappedBytes(): number {
    let bytes = 0;
    for (const size of this.mappings.values()) bytes += size;
    return bytes;
  }
}
