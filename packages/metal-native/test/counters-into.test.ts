// The addon's countersInto: the figures of counters() written into a Float64Array (the wrapper's object is
// made over them, a fraction of the cost of the addon setting 18 named fields), the same figures in the same
// order, and every other argument refused without a write. NUVEC_CONTRACT_ADDON=<file.node> checks that file.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { openNativeBackendFile } from "../src/addon/loader.js";

const addonFile =
  process.env.NUVEC_CONTRACT_ADDON ??
  new URL("../native/build/Release/nuvec_metal_native.node", import.meta.url).pathname;

interface RawCounters {
  counters(): { buffersMade: number; buffersReleased: number } & Record<string, number>;
  countersInto(values: unknown): void;
  NativeBufferHandle: new (bytes: number) => { release(): void };
}

describe.runIf(process.platform === "linux" && existsSync(addonFile))("countersInto (host addon)", () => {
  const raw = createRequire(import.meta.url)(addonFile) as RawCounters;

  it("writes counters()'s figures in its order, and the backend's counters() is made from them", () => {
    const buffer = new raw.NativeBufferHandle(4096);
    const values = new Float64Array(18);
    raw.countersInto(values);
    const object = raw.counters();
    expect(Object.keys(object)).toHaveLength(18);
    expect([...values]).toEqual(Object.values(object));
    expect(object.buffersMade - object.buffersReleased).toBeGreaterThanOrEqual(1);
    buffer.release();
    const backend = openNativeBackendFile(addonFile);
    const made = backend.counters();
    expect(Object.keys(made)).toEqual(Object.keys(raw.counters()));
    expect(made).toEqual(raw.counters());
    expect(made).not.toBe(backend.counters()); // a fresh object each call
  });

  it("refuses anything but a Float64Array of the 18 counters, writing nothing", () => {
    const detached = new Float64Array(18);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const untouched = new Float64Array(19).fill(-1);
    for (const values of [
      undefined,
      [0],
      new Float64Array(17),
      untouched,
      new Float32Array(18),
      new BigInt64Array(18),
      new DataView(new ArrayBuffer(144)),
      new ArrayBuffer(144),
      detached,
    ]) {
      let error: unknown;
      try {
        raw.countersInto(values);
      } catch (caught) {
        error = caught;
      }
      expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "values" });
    }
    expect([...untouched]).toEqual(new Array(19).fill(-1));
  });
});
