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

describe("hostile kernels and abandoned stream work", () => {
  it("keeps the process up: work dropped at close nobody awaits, kernels that throw anything or call back in", () => {
    // In a child, under Node's default --unhandled-rejections=throw: one unhandled rejection would end it.
    const child = runInChild(`
      import { MockBackend } from ${JSON.stringify(mockUrl)};
      const shape = { grid: [1, 1, 1], block: [1, 1, 1], sharedBytes: 0 };
      const outcomes = [];
      const settle = (promise) => promise.then(() => "resolved", (reason) => reason?.code ?? String(reason));

      // 1. Reads, done() and events left pending, never awaited, then the backend closed.
      const idle = new MockBackend({ streams: { completion: "manual" } });
      const stream = idle.newStream();
      const x = idle.newBuffer(64);
      stream.read(x, 0, 64);
      stream.done();
      stream.record().done();
      x.release();
      idle.close();

      // 2. Kernels that throw what is no Error, and one that closes the backend it runs on.
      const mock = new MockBackend();
      let own;
      const module = mock.loadModule({ mock: {
        undefinedThrown: { parameters: [], run() { throw undefined; } },
        numberThrown: { parameters: [], run() { throw 42; } },
        closes: { parameters: [], run() { mock.close(); } },
        reenters: { parameters: ["buffer"], run([bytes]) { own.write(y, 0, Uint8Array.of(7)); own.synchronize(); bytes[1] = 5; } },
      } });
      const y = mock.newBuffer(16);
      for (const name of ["undefinedThrown", "numberThrown"]) {
        const failing = mock.newStream();
        failing.launch(module.kernel(name), shape, []);
        outcomes.push(await settle(failing.done()));
      }
      own = mock.newStream();
      own.launch(module.kernel("reenters"), shape, [{ kind: "buffer", buffer: y, offset: 0 }]);
      own.synchronize();
      outcomes.push([...y.read(0, 2)].join(","));
      const last = mock.newStream();
      last.launch(module.kernel("closes"), shape, []);
      const after = last.read(y, 0, 4);
      y.release();
      outcomes.push(await settle(last.done()), await settle(after));
      await new Promise((resolve) => setTimeout(resolve, 20));
      const live = (backend) => backend.counters().buffersMade - backend.counters().buffersReleased;
      console.log(JSON.stringify({ outcomes, closed: [idle.closed, mock.closed], live: [live(idle), live(mock)] }));
    `);
    expect(child.stderr).toBe("");
    expect(reportOf(child)).toEqual({
      outcomes: ["undefined", "42", "7,5", "ERR_NUVEC_RELEASED", "ERR_NUVEC_RELEASED"],
      closed: [true, true],
      live: [0, 0],
    });
  });
});
