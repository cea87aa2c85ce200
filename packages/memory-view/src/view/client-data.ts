/// <reference lib="dom" />
// The memory view's data decoding: turns the report's embedded bytes (base64 of gzip, laid out as typed arrays
// by render.ts) back into arrays, and those arrays into the core's input and the hover's texts. Self-contained
// like the core (the report inlines `memoryViewData`'s source): everything it needs comes in as arguments.
import type { CoreInput } from "./core.js";

/** One embedded array: name, typed-array type, byte offset, length, and how it is coded (see render.ts). */
export type DataLayoutEntry = [string, string, number, number, string?];

/** The decoded arrays, by name. */
export type DataArrays = Record<string, Float64Array | Uint32Array | Int32Array | Uint8Array>;

/** What the page reads from the decoded arrays: the core's input, and the per-allocation texts. */
export interface DataRead {
  input: CoreInput;
  /** Per allocation, its label's index into `labelTexts` (-1: none). */
  labels: Int32Array;
  labelTexts: string[];
  /** Events of the trace's marks, and their names. */
  markAt: Uint32Array;
  markNames: string[];
  /** Per allocation, its stack's index into `stackTexts` (-1 or absent: none). */
  stacks: Int32Array;
  stackTexts: string[][];
}

/** The data decoding's functions, as {@link memoryViewData} returns them. */
export interface MemoryViewData {
  /** The arrays of `text` (base64 of gzip) as `layout` places them; `atob` is the page's, for old browsers. */
  decode(text: string, layout: DataLayoutEntry[], atob: (text: string) => string): Promise<DataArrays>;
  /** The core's input and the per-allocation texts, from the decoded arrays and the report's metadata. */
  read(meta: { events: number; policies: string[]; external: string[] }, arrays: DataArrays): DataRead;
}

/** The data decoding's functions: `decode` (embedded text to arrays) and `read` (arrays to the page's data). */
export function memoryViewData(): MemoryViewData {
  /** The arrays of `text` (base64 of gzip) as `layout` places them; `atob` is the page's, for old browsers. */
  async function decode(
    text: string,
    layout: DataLayoutEntry[],
    atob: (text: string) => string,
  ): Promise<DataArrays> {
    // The native decoder where the browser has it (several times faster on megabytes), else atob.
    const fromBase64 = (Uint8Array as unknown as { fromBase64?: (text: string) => Uint8Array }).fromBase64;
    let bytes: Uint8Array;
    if (fromBase64 !== undefined) bytes = fromBase64(text);
    else {
      const binary = atob(text);
      bytes = new Uint8Array(binary.length);
      for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
    }
    const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip"));
    const buffer = await new Response(stream).arrayBuffer();
    const arrays: DataArrays = {};
    for (const [name, type, offset, length, coding] of layout) {
      if (type === "Float64Array") arrays[name] = new Float64Array(buffer, offset, length);
      else if (type === "Int32Array") arrays[name] = new Int32Array(buffer, offset, length);
      else if (type === "Uint8Array") arrays[name] = new Uint8Array(buffer, offset, length);
      else arrays[name] = new Uint32Array(buffer, offset, length);
      // Event indices stored as differences (render.ts's codingOf): summed back in place.
      const values = arrays[name] as Uint32Array;
      if (coding === "delta")
        for (let index = 1; index < length; index += 1)
          values[index] = (values[index] as number) + (values[index - 1] as number);
      else if (coding !== undefined) {
        const base = arrays[coding.slice("after:".length)] as Uint32Array;
        for (let index = 0; index < length; index += 1)
          values[index] = (values[index] as number) + (base[index] as number);
      }
    }
    return arrays;
  }

  /** The core's input and the per-allocation texts, from the decoded arrays and the report's metadata. */
  function read(
    meta: { events: number; policies: string[]; external: string[] },
    arrays: DataArrays,
  ): DataRead {
    const input: CoreInput = {
      events: meta.events,
      start: arrays.start as Uint32Array,
      end: arrays.end as Uint32Array,
      size: arrays.size as Float64Array,
      policies: meta.policies.map((name, index) => ({
        name,
        charged: arrays[`charged${index}`] as Float64Array,
        reservedAt: arrays[`reservedAt${index}`] as Uint32Array,
        reservedValue: arrays[`reservedValue${index}`] as Float64Array,
      })),
      external: meta.external.map((name, index) => ({
        name,
        at: arrays[`externalAt${index}`] as Uint32Array,
        value: arrays[`externalValue${index}`] as Float64Array,
      })),
      mapped: { at: arrays.mappedAt as Uint32Array, value: arrays.mappedValue as Float64Array },
    };
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return {
      input,
      labels: arrays.label as Int32Array,
      markAt: (arrays.markAt as Uint32Array | undefined) ?? new Uint32Array(0),
      markNames: JSON.parse(text(arrays.markNames as Uint8Array)) as string[],
      labelTexts: JSON.parse(text(arrays.labels as Uint8Array)) as string[],
      stacks: (arrays.stack as Int32Array | undefined) ?? new Int32Array(0),
      stackTexts:
        arrays.stacks !== undefined ? (JSON.parse(text(arrays.stacks as Uint8Array)) as string[][]) : [],
    };
  }

  return { decode, read };
}
