// Hostile use of the mock: a view moved away by its holder (postMessage transfer,
// ArrayBuffer.prototype.transfer) must not stop free or close, and mapping a FIFO must not hang.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { reportOf, runInChild } from "../../../native-core/test/child.js";
import { detachArrayBuffer, isDetached } from "./support.js";

const folder = mkdtempSync(join(tmpdir(), "nuvec-mock-hostile-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
// ArrayBuffer.prototype.transfer: behind a flag on Node.js 20, always there from 21.
const withTransfer = {
  nodeOptions:
    typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer === "function"
      ? []
      : ["--harmony-rab-gsab-transfer"],
};
const mockUrl = new URL("../../dist/mock.js", import.meta.url).href;

describe("views moved away by their holder", () => {
  it("detaching a view that was already transferred does not throw: the bytes went with it", () => {
    const memory = new ArrayBuffer(64);
    new Uint8Array(memory).fill(7);
    const moved = structuredClone(memory, { transfer: [memory] });
    expect(isDetached(memory, 64)).toBe(true);
    expect(detachArrayBuffer(memory, 64)).toBeUndefined();
    expect(new Uint8Array(moved)[0]).toBe(7);
  });

  it("detach, free and close work after ArrayBuffer.prototype.transfer and postMessage of views (Node ≥ 21 semantics)", () => {
    const result = reportOf(
      runInChild(
        `
      import { MockBackend } from ${JSON.stringify(mockUrl)};
      const backend = new MockBackend();
      const errors = [];
      const attempt = (what, action) => { try { action(); } catch (error) { errors.push(what + ": " + error.constructor.name + " " + error.message); } };
      const a = backend.newBuffer(4096);
      new Uint8Array(a.contents()).fill(1);
      const moved = a.contents().transfer();
      attempt("detachContents", () => a.detachContents());
      const fresh = a.contents().byteLength;
      attempt("release", () => a.release());
      const b = backend.newBuffer(8192);
      const view = b.contents();
      const { port1, port2 } = new MessageChannel();
      port1.postMessage(view, [view]);
      port1.close(); port2.close();
      attempt("detachContents after postMessage", () => b.detachContents());
      const freshPosted = b.contents().byteLength;
      backend.addFile("/virtual/weights.bin", new Uint8Array(100).fill(3));
      const file = backend.mapFile("/virtual/weights.bin");
      const fileView = file.contents().transfer();
      const c = backend.newBuffer(300);
      c.contents().transfer();
      attempt("close", () => backend.close());
      console.log(JSON.stringify({
        hasTransfer: typeof ArrayBuffer.prototype.transfer === "function",
        errors, fresh, freshPosted, closed: backend.closed, movedByte: new Uint8Array(moved)[0], fileByte: new Uint8Array(fileView)[0],
        live: backend.counters().buffersMade - backend.counters().buffersReleased,
        mappings: backend.counters().mappingsMade - backend.counters().mappingsReleased,
      }));
    `,
        withTransfer,
      ),
    );
    expect(result).toEqual({
      hasTransfer: true,
      errors: [],
      fresh: 4096,
      freshPosted: 8192,
      closed: true,
      movedByte: 1,
      fileByte: 3,
      live: 0,
      mappings: 0,
    });
  });
});

describe.skipIf(process.platform === "win32")("mapFile of what is not a regular file", () => {
  it("refuses a FIFO at once, as the host does (mmap, ENODEV), instead of waiting for a writer", () => {
    const fifo = join(folder, "pipe");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    // In a child: the bug was a blocking open(2) that no test timeout can interrupt; the child's generous
    // limit turns a hang into a failure instead of a stuck suite (it is not a bound on speed).
    const child = runInChild(`
      import { MockBackend } from ${JSON.stringify(mockUrl)};
      const backend = new MockBackend({ realFiles: true });
      const before = JSON.stringify(backend.counters());
      try { backend.mapFile(${JSON.stringify(fifo)}); console.log(JSON.stringify({ mapped: true })); }
      catch (error) {
        console.log(JSON.stringify({ name: error.constructor.name, code: error.code, syscall: error.syscall,
          errno: error.errno, path: error.path, unchanged: JSON.stringify(backend.counters()) === before }));
      }`);
    expect(reportOf(child)).toEqual({
      name: "SystemCallError",
      code: "ERR_NUVEC_SYSTEM",
      syscall: "mmap",
      errno: "ENODEV",
      path: fifo,
      unchanged: true,
    });
  });
});
