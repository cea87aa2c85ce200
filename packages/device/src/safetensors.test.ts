/**
 * mapSafetensors: a checkpoint mapped without a copy on the mock, then a real mapping whose header is read from
 * the file while the file is truncated or replaced at chosen moments. The format's own checks are tested on
 * bytes in memory in `safetensors-header.test.ts`.
 */
import { renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError, type FormatError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { thrown } from "../../stats/test/thrown.js";
import { wrapBackend } from "../test/reliability/support.js";
import { arrayBufferOf, checkpoint, tensor } from "../test/safetensors-bytes.js";
import { Device } from "./device.js";
import { mapSafetensors, readSafetensorsHeader } from "./safetensors.js";

/** A Device on the mock with virtual files only. */
function device() {
  const backend = new MockBackend({ realFiles: false });
  return { backend, device: Device.open({ backend }) };
}

describe("mapSafetensors", () => {
  it("maps the checkpoint without a copy and gives each tensor's bytes as a view of the mapping", () => {
    const { backend, device: opened } = device();
    const data = Uint8Array.from({ length: 12 }, (_, index) => index + 1);
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]), b: tensor([4, 12], [8]) }, data));
    const model = mapSafetensors(opened, "/m.safetensors");
    expect(model.header.tensors.map((entry) => entry.name)).toEqual(["a", "b"]);
    const b = model.tensorBytes("b");
    expect([...b]).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(b.buffer).toBe(model.file.contents());
    expect(opened.memoryStats().mapped).toBe(model.file.allocatedLength);
    expect(() => model.tensorBytes("c")).toThrow(ArgumentError);
    model.file.free();
    expect(b.byteLength).toBe(0); // detached with the mapping
    opened.close();
  });

  it("unmaps a malformed checkpoint before throwing: nothing stays charged", () => {
    const { backend, device: opened } = device();
    backend.addFile("/bad.safetensors", checkpoint({ a: tensor([0, 4]), b: tensor([2, 6]) }));
    const before = opened.memoryStats();
    expect(() => mapSafetensors(opened, "/bad.safetensors")).toThrow(
      expect.objectContaining({ name: "FormatError", code: "ERR_NUVEC_SAFETENSORS" }),
    );
    // The mapping existed for the header's read: only the peak remembers it.
    expect(opened.memoryStats()).toEqual({ ...before, peakActiveWithMapped: 16384 });
    expect(opened.counters().mappings).toBe(0);
    opened.close();
  });

  it("readTensor copies a tensor's bytes (no view of the mapping); unknown names and freed files refused", () => {
    const { backend, device: opened } = device();
    const data = Uint8Array.from({ length: 12 }, (_, index) => index + 1);
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]), b: tensor([4, 12], [8]) }, data));
    const model = mapSafetensors(opened, "/m.safetensors");
    const b = model.readTensor("b");
    expect([...b]).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(b.buffer).not.toBe(model.file.contents());
    expect(thrown(() => model.readTensor("c"))).toMatchObject({
      name: "ArgumentError",
      argument: "name",
      message: 'readTensor(name): no tensor "c" in /m.safetensors',
    });
    model.file.free();
    expect([...b]).toEqual([5, 6, 7, 8, 9, 10, 11, 12]); // a copy: not detached
    expect(thrown(() => model.readTensor("b"))).toMatchObject({
      name: "StateError",
      code: "ERR_NUVEC_MAPPING_FREED",
      message: "readTensor(): the mapped file was already freed",
    });
    opened.close();
  });

  it("a closed device: a StateError naming mapSafetensors, nothing opened", () => {
    const { backend, device: opened } = device();
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]) }));
    opened.close();
    expect(thrown(() => mapSafetensors(opened, "/m.safetensors"))).toMatchObject({
      name: "StateError",
      code: "ERR_NUVEC_DEVICE_CLOSED",
      message: "mapSafetensors(): the device is closed",
    });
  });

  it("is Disposable: `using` frees the file at the end of the scope, once, and not after close", () => {
    const { backend, device: opened } = device();
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]) }));
    let view: Uint8Array;
    {
      using model = mapSafetensors(opened, "/m.safetensors");
      view = model.tensorBytes("a");
      expect(opened.counters().mappings).toBe(1);
    }
    expect(view.byteLength).toBe(0);
    expect(opened.memoryStats().mapped).toBe(0);
    expect(opened.counters().mappings).toBe(0);
    // Freed by hand first, or the device closed: disposing does nothing and throws nothing.
    const freed = mapSafetensors(opened, "/m.safetensors");
    freed.file.free();
    freed[Symbol.dispose]();
    const closed = mapSafetensors(opened, "/m.safetensors");
    opened.close();
    expect(() => closed[Symbol.dispose]()).not.toThrow();
  });
});

// The header of a real mapping is read from the file (pread), never through the mapping. A stand-in backend
// says it is the host's while the mock maps the real file (read whole), so each change of the file can be
// made at a chosen moment: before the mapping, between the mapping and the reader's checks.
describe("mapSafetensors reads the header of a real mapping from the file", () => {
  const { folder } = scratchFolder("nuvec-map-safetensors-");
  let files = 0;
  function mapped(content: Uint8Array, around?: (path: string) => void, after?: (path: string) => void) {
    files += 1;
    const path = join(folder, `m${files}.safetensors`);
    writeFileSync(path, content);
    const mock = new MockBackend({ realFiles: true });
    const backend = wrapBackend(mock, {
      platform: "host",
      mapFile(given) {
        around?.(given);
        const file = mock.mapFile(given);
        after?.(given);
        return file;
      },
    });
    const opened = Device.open({ backend });
    return { path, opened, outcome: () => thrown(() => mapSafetensors(opened, path)) };
  }
  const good = checkpoint({ a: tensor([0, 4]), b: tensor([4, 12], [8]) }, 4096);
  const nothingHeld = (opened: Device) => {
    expect(opened.memoryStats().mapped).toBe(0);
    expect(opened.counters().mappings).toBe(0);
    opened.close();
  };

  it("reads the same header as the bytes hold", () => {
    const { path, opened } = mapped(good);
    const model = mapSafetensors(opened, path);
    expect(model.header).toEqual(readSafetensorsHeader(arrayBufferOf(good)));
    expect(model.file.length).toBe(good.byteLength);
    model[Symbol.dispose]();
    nothingHeld(opened);
  });

  it("readTensor reads the file with pread; once the file is truncated or replaced: FormatError, field file", () => {
    const { path, opened } = mapped(good);
    using model = mapSafetensors(opened, path);
    const b = model.header.tensors[1] as { offset: number; byteLength: number };
    expect(
      Buffer.from(model.readTensor("b")).equals(Buffer.from(good.subarray(b.offset, b.offset + 8))),
    ).toBe(true);
    writeFileSync(`${path}.new`, good);
    renameSync(`${path}.new`, path);
    expect(thrown(() => model.readTensor("b"))).toMatchObject({
      name: "FormatError",
      field: "file",
      message: expect.stringContaining("changed since it was mapped (it is not the file mapped, as it was)"),
    });
    truncateSync(path, 100);
    expect(thrown(() => model.readTensor("b"))).toMatchObject({ name: "FormatError", field: "file" });
    rmSync(path);
    expect(thrown(() => model.readTensor("b"))).toMatchObject({
      name: "FormatError",
      field: "file",
      message: expect.stringContaining("(it cannot be opened any more)"),
      cause: { name: "SystemCallError", errno: "ENOENT" },
    });
  });

  it("a file truncated after its mapping: FormatError, field file, with both lengths; unmapped", () => {
    const { opened, outcome } = mapped(good, undefined, (path) => truncateSync(path, 100));
    expect(outcome()).toMatchObject({
      name: "FormatError",
      code: "ERR_NUVEC_SAFETENSORS",
      field: "file",
      message: expect.stringContaining(`(${good.byteLength} bytes were mapped, the file has 100)`),
    });
    nothingHeld(opened);
  });

  it("another file renamed over it after its mapping: FormatError, field file", () => {
    const { opened, outcome } = mapped(good, undefined, (path) => {
      writeFileSync(`${path}.new`, good);
      renameSync(`${path}.new`, path);
    });
    expect(outcome()).toMatchObject({
      name: "FormatError",
      field: "file",
      message: expect.stringContaining("(another file was renamed over it)"),
    });
    nothingHeld(opened);
  });

  it("truncated to nothing between the reader's open and the mapping: FormatError, the backend's error as cause", () => {
    const { opened, outcome } = mapped(good, (path) => truncateSync(path, 0));
    const error = outcome() as FormatError;
    expect(error).toMatchObject({ name: "FormatError", field: "file" });
    expect(error.message).toContain("(it was truncated or rewritten)");
    expect(error.cause).toMatchObject({ name: "SystemCallError", syscall: "mmap", errno: "EINVAL" });
    nothingHeld(opened);
  });

  it("truncated before the mapping to less than its header: the truncation, by how much", () => {
    const { opened, outcome } = mapped(good, (path) => truncateSync(path, 20));
    expect(outcome()).toMatchObject({
      name: "FormatError",
      field: "header_length",
      message: `the file is truncated: its header length ${good.byteLength - 8 - 4096} needs ${good.byteLength - 4096} bytes, the file has 20 (${good.byteLength - 4096 - 20} bytes missing)`,
    });
    nothingHeld(opened);
  });

  it("an empty file: truncated to nothing, a FormatError (mapFile's refusal as cause), as on the mock", () => {
    const { opened, outcome } = mapped(new Uint8Array(0));
    const { backend, device: onMock } = device();
    backend.addFile("/empty.safetensors", 0);
    for (const error of [outcome(), thrown(() => mapSafetensors(onMock, "/empty.safetensors"))]) {
      expect(error).toMatchObject({
        name: "FormatError",
        field: "header_length",
        message: "the file is truncated: 0 bytes, 8 bytes missing from its 8-byte header length",
        cause: { name: "SystemCallError", syscall: "mmap", errno: "EINVAL" },
      });
    }
    nothingHeld(onMock);
    nothingHeld(opened);
  });

  it("a missing path or a folder: the backend's own error, as mapFile gives it", () => {
    const { opened } = mapped(good);
    const missing = join(folder, "missing.safetensors");
    expect(thrown(() => mapSafetensors(opened, missing))).toEqual(thrown(() => opened.mapFile(missing)));
    expect(thrown(() => mapSafetensors(opened, folder))).toEqual(thrown(() => opened.mapFile(folder)));
    nothingHeld(opened);
  });
});
