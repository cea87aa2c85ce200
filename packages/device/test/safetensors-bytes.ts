/**
 * Safetensors files built byte by byte for the reader's tests: a header (JSON, or text given as it is) behind
 * its 8-byte length, then the data. Apart from the tests so that those of the header and those of the mapping
 * build their files the same way.
 */

/** A safetensors file: the 8-byte length, `header` (JSON, or text as given), then `dataBytes` of data. */
export function checkpoint(header: unknown, data: Uint8Array | number = 64): Uint8Array {
  const body = new TextEncoder().encode(typeof header === "string" ? header : JSON.stringify(header));
  const bytes = typeof data === "number" ? new Uint8Array(data) : data;
  const file = new Uint8Array(8 + body.length + bytes.length);
  new DataView(file.buffer).setBigUint64(0, BigInt(body.length), true);
  file.set(body, 8);
  file.set(bytes, 8 + body.length);
  return file;
}

/** A copy of `bytes` in an ArrayBuffer of its own, as `readSafetensorsHeader` takes. */
export const arrayBufferOf = (bytes: Uint8Array): ArrayBuffer => bytes.slice().buffer;
/** A tensor entry of a header: `data_offsets`, a shape (4 elements) and a dtype (U8) unless given. */
export const tensor = (offsets: unknown[], shape = [4], dtype = "U8") => ({
  dtype,
  shape,
  data_offsets: offsets,
});
