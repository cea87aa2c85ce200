// The addon's calls by slot (contentsOf, detachContentsOf): what the wrappers call for every view, finding
// the handle in a table instead of unwrapping the handle object. A slot reaches exactly its own live handle.
import { createRequire } from "node:module";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { RawAddon } from "@nuvec/native-core/addon";
import { describe, expect, it } from "vitest";
import { ADDON_FILE_NAME, packageRoot } from "../src/platforms.js";

const addon = createRequire(import.meta.url)(
  join(packageRoot(), "native", "build", "Release", ADDON_FILE_NAME),
) as RawAddon;
const SLOT_GENERATION = 2 ** 32;

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;
const turn = () => new Promise((resolve) => setImmediate(resolve));

function codeOf(call: () => unknown): { code?: string; argument?: string } {
  try {
    call();
  } catch (error) {
    return error as { code?: string; argument?: string };
  }
  throw new Error("expected a throw");
}

describe.runIf(process.platform === "linux")("calls by slot", () => {
  it("reach the handle whose slot it is; a released handle's slot is refused as released", () => {
    const first = new addon.NativeBufferHandle(4096);
    const second = new addon.NativeBufferHandle(8192);
    expect(first.slot).not.toBe(second.slot);
    const view = addon.contentsOf(second.slot, 100);
    expect(view.byteLength).toBe(100);
    expect(addon.contentsOf(second.slot, 100)).toBe(view);
    expect(addon.contentsOf(first.slot).byteLength).toBe(4096);
    expect(addon.detachContentsOf(second.slot)).toBe(false);
    expect(view.byteLength).toBe(0);
    addon.writeOf(second.slot, new Uint8Array([7, 8, 9]), 8189);
    expect([...new Uint8Array(addon.readOf(second.slot, 8188, 4))]).toEqual([0, 7, 8, 9]);
    const target = new ArrayBuffer(8);
    expect(addon.readOf(second.slot, 8189, 3, target)).toBe(target);
    expect([...new Uint8Array(target)]).toEqual([7, 8, 9, 0, 0, 0, 0, 0]);
    expect(codeOf(() => addon.readOf(second.slot, 0, 9, target))).toMatchObject({ argument: "target" });
    first.release();
    expect(codeOf(() => addon.contentsOf(first.slot)).code).toBe("ERR_NUVEC_RELEASED");
    expect(codeOf(() => addon.detachContentsOf(first.slot)).code).toBe("ERR_NUVEC_RELEASED");
    second.release();
  });

  it("refuse, as a bad argument, every number that is no live handle's slot and anything not a number", () => {
    const buffer = new addon.NativeBufferHandle(4096);
    const counters = addon.counters();
    for (const bad of [
      -1,
      0.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      2 ** 53,
      buffer.slot + SLOT_GENERATION,
      "0",
      undefined,
    ]) {
      const error = codeOf(() => addon.contentsOf(bad as number));
      expect([bad, error.code, error.argument]).toEqual([bad, "ERR_NUVEC_INVALID_ARGUMENT", "slot"]);
      expect(codeOf(() => addon.detachContentsOf(bad as number)).code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
      expect(codeOf(() => addon.readOf(bad as number, 0, 1)).code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    }
    expect(addon.counters()).toEqual(counters);
    buffer.release();
  });

  it("a collected handle's slot finds nothing any more, and its index is taken again under a new generation", async () => {
    let slot = -1;
    (() => {
      slot = new addon.NativeBufferHandle(4096).slot;
    })();
    for (let attempt = 0; attempt < 5; attempt++) {
      collectGarbage();
      await turn();
    }
    const next = new addon.NativeBufferHandle(4096);
    // A freed index is taken before the table grows, under its next generation.
    expect(next.slot).toBeGreaterThanOrEqual(SLOT_GENERATION);
    expect(codeOf(() => addon.contentsOf(slot)).code).toBe("ERR_NUVEC_INVALID_ARGUMENT");
    expect(addon.contentsOf(next.slot).byteLength).toBe(4096);
    next.release();
  });
});
