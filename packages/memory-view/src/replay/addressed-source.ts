// A buffer source with no memory behind it that gives every system buffer an address, as a device's
// allocator would: what an export to PyTorch's snapshot format needs (segments and blocks have addresses
// there). The figures are a CountingBufferSource's: the same device facts, the same calls.
import { type BufferSource, CountingBufferSource } from "@nuvec/allocator";

/** What the source tells as the allocator takes and gives back memory (addresses and bytes). */
export interface SourceListener {
  /** A system buffer (a segment) made. */
  segmentAlloc(address: number, bytes: number): void;
  /** A system buffer given back. */
  segmentFree(address: number, bytes: number): void;
  /** Memory mapped into reserved address space (an expandable segment growing). */
  segmentMap(address: number, bytes: number): void;
  /** Memory of an expandable segment unmapped. */
  segmentUnmap(address: number, bytes: number): void;
}

/** The device facts a replay runs with (a trace header's `allocator` records them). */
export interface DeviceFacts {
  workingSet: number;
  memorySize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
  /** CUDA's map granularity: memory mapped into reserved address space (expandable segments). */
  mapGranularity?: number;
}

// Segments start on 2 MiB boundaries, as CUDA's large allocations do; the first one is away from 0.
const ALIGNMENT = 2 * 1024 * 1024;
const FIRST_ADDRESS = 0x7f00_0000_0000;

interface Entry {
  address: number;
  bytes: number;
  kind: "buffer" | "range" | "space";
}

/** A {@link BufferSource} of numbered buffers, each with an address and a length. */
export class AddressedSource extends CountingBufferSource implements BufferSource<number> {
  readonly mapGranularity?: number;
  readonly #entries = new Map<number, Entry>();
  readonly #listener: SourceListener | undefined;
  #cursor = FIRST_ADDRESS;
  #serial = 0;

  /** A source with `facts`; `listener` (optional) hears of every segment made and given back. */
  constructor(facts: DeviceFacts, listener?: SourceListener) {
    super(facts);
    this.#listener = listener;
    if (facts.mapGranularity !== undefined) {
      this.mapGranularity = facts.mapGranularity;
      Object.assign(this, {
        reserve: (capacity: number) => this.#reserve(capacity),
        map: (space: number, offset: number, length: number) => this.#map(space, offset, length, true),
        unmap: (space: number, offset: number, length: number) => this.#map(space, offset, length, false),
      });
    }
  }

  /** Where buffer or range `buffer` starts (`undefined`: none such). */
  addressOf(buffer: number | undefined): number | undefined {
    return buffer === undefined ? undefined : this.#entries.get(buffer)?.address;
  }

  #take(bytes: number): number {
    const address = this.#cursor;
    this.#cursor += Math.ceil(Math.max(1, bytes) / ALIGNMENT) * ALIGNMENT;
    return address;
  }

  override acquire(bytes: number): number {
    super.acquire(bytes);
    this.#serial += 1;
    const address = this.#take(bytes);
    this.#entries.set(this.#serial, { address, bytes, kind: "buffer" });
    this.#listener?.segmentAlloc(address, bytes);
    return this.#serial;
  }

  override release(buffer: number): void {
    const entry = this.#entries.get(buffer);
    this.#entries.delete(buffer);
    // Giving back a reserved space is no system release (CountingMappingSource's rule).
    if (entry?.kind === "space") return;
    super.release(buffer);
    if (entry !== undefined) this.#listener?.segmentFree(entry.address, entry.bytes);
  }

  override range(segment: number, offset: number, length: number): number {
    super.range(segment, offset, length);
    this.#serial += 1;
    const base = this.#entries.get(segment)?.address ?? 0;
    this.#entries.set(this.#serial, { address: base + offset, bytes: length, kind: "range" });
    return this.#serial;
  }

  /** A range given back: its segment's memory stays. */
  releaseRange(range: number): void {
    this.#entries.delete(range);
  }

  #reserve(capacity: number): number {
    this.#serial += 1;
    this.#entries.set(this.#serial, { address: this.#take(capacity), bytes: capacity, kind: "space" });
    return this.#serial;
  }

  #map(space: number, offset: number, length: number, mapping: boolean): void {
    const address = (this.#entries.get(space)?.address ?? 0) + offset;
    if (mapping) {
      this.acquired += 1;
      this.#listener?.segmentMap(address, length);
    } else {
      this.released += 1;
      this.#listener?.segmentUnmap(address, length);
    }
  }
}
