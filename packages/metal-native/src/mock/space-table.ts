// The backend's table of address spaces (reserveAddressSpace): which of its buffers are spaces, and the
// mappings of each (address-space.ts). Apart from backend.ts because address spaces are an option of the mock
// (`mapGranularity`), with checks of their own, beside the buffers, files and sets every mock has.
import type { NativeBuffer } from "@nuvec/native-core";
import { checkBufferLength, releasedError } from "@nuvec/native-core";
import { ArgumentError } from "@nuvec/stats";
import { MockSpace } from "./address-space.js";
import { MockBuffer } from "./buffer.js";
import type { MockCore } from "./core.js";

/** The address spaces of one mock backend. */
export class MockSpaceTable {
  readonly #core: MockCore;
  readonly #spaces = new WeakMap<MockBuffer, MockSpace>();

  constructor(core: MockCore) {
    this.#core = core;
  }

  /**
   * A space of `capacity` bytes (whole granules of `granularity`, at most `maxBufferLength`) with no memory,
   * counted as a buffer made; `nextId` is asked for its id once every check passed.
   */
  reserve(capacity: number, granularity: number, maxBufferLength: number, nextId: () => number): MockBuffer {
    this.#core.assertOpen("reserveAddressSpace()");
    checkBufferLength(capacity, maxBufferLength);
    if (capacity % granularity !== 0) {
      throw new ArgumentError(
        "capacity",
        `reserveAddressSpace(): ${capacity} bytes is not whole granules of ${granularity}`,
      );
    }
    const space = new MockBuffer(this.#core, nextId(), capacity, 0);
    this.#core.adopt(space);
    this.#core.counters.buffersMade += 1;
    this.#spaces.set(space, new MockSpace(capacity, granularity));
    return space;
  }

  /** The mappings of `buffer` when it is a space of this backend, else `undefined`. */
  get(buffer: MockBuffer): MockSpace | undefined {
    return this.#spaces.get(buffer);
  }

  /**
   * The mappings of `space` for `method`: a `StateError` once the backend is closed or the space released,
   * an `ArgumentError` naming `space` for anything but a space of this backend.
   */
  of(space: NativeBuffer, method: string): MockSpace {
    this.#core.assertOpen(`${method}()`);
    const found = space instanceof MockBuffer ? this.#spaces.get(space) : undefined;
    if (found === undefined) {
      throw new ArgumentError("space", `${method}(): space must be an address space of this backend`);
    }
    if (space.released) throw releasedError(`${method}(): the space was already released`);
    return found;
  }
}
