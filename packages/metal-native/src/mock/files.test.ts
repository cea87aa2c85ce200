// The mock's virtual files and mapping faults beyond the contract: files added by bytes or by length (no
// memory until read), shadowing real files or replacing the file system (`realFiles: false`), and
// `failMapping` (which paths fail, how, at which attempt). Apart from mock.test.ts because files are the one
// part of the mock that touches the file system; what every backend's mapFile does is in the contract suite.
import { fileURLToPath } from "node:url";
import { ArgumentError, SystemCallError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../../native-core/test/support.js";
import { MockBackend, MockMappedFile } from "../mock.js";

const GIB = 1024 ** 3;
/** The size-limited allocation failure. */
const allocationFailed = expect.objectContaining({
  name: "OutOfMemoryError",
  code: "ERR_NUVEC_ALLOCATION_FAILED",
});

describe("MockBackend virtual files and mapping faults", () => {
  it("maps a virtual file's bytes (copied when added, and by each mapping); writes never change the file", () => {
    const mock = new MockBackend({ pageSize: 4096 });
    const content = Uint8Array.from({ length: 5000 }, (_, index) => index % 251);
    mock.addFile("/models/a.safetensors", content);
    content[0] = 99; // the mock copied it
    const mapping = mock.mapFile("/models/a.safetensors");
    expect(mapping).toBeInstanceOf(MockMappedFile);
    expect(mapping.source).toBe("virtual");
    expect([mapping.length, mapping.mappedLength, mapping.allocatedSize]).toEqual([5000, 8192, 8192]);
    const view = new Uint8Array(mapping.contents());
    expect([view[0], view[4999]]).toEqual([0, 4999 % 251]);
    view.fill(7);
    const second = mock.mapFile("/models/a.safetensors");
    expect(new Uint8Array(second.contents())[0]).toBe(0);
    expect(mock.files).toEqual(["/models/a.safetensors"]);
    // Replaced, then removed: the mappings made keep their bytes.
    mock.addFile("/models/a.safetensors", Uint8Array.of(9, 9, 9));
    expect([mock.removeFile("/models/a.safetensors"), mock.removeFile("/models/a.safetensors")]).toEqual([
      true,
      false,
    ]);
    const kept = new Uint8Array(second.contents());
    expect([kept[1], kept[4999], mock.files.length]).toEqual([1, 4999 % 251, 0]);
  });

  it("a virtual file given by its length is zeros and needs no memory", () => {
    const mock = new MockBackend();
    mock.addFile("/models/huge.bin", 40 * GIB + 1);
    const mapping = mock.mapFile("/models/huge.bin");
    expect([mapping.mappedLength, mock.counters().mappedBytes]).toEqual([
      40 * GIB + 16_384,
      40 * GIB + 16_384,
    ]);
    expect(() => mapping.contents()).toThrow(allocationFailed);
    mock.addFile("/models/small.bin", 100);
    expect(new Uint8Array(mock.mapFile("/models/small.bin").contents())).toEqual(new Uint8Array(100));
  });

  it("an empty virtual file fails like an empty real one: mmap EINVAL", () => {
    const mock = new MockBackend();
    mock.addFile("/empty", 0);
    const error = thrown(() => mock.mapFile("/empty")) as SystemCallError;
    expect(error).toBeInstanceOf(SystemCallError);
    expect([error.syscall, error.errno, error.errnoNumber, error.path]).toEqual([
      "mmap",
      "EINVAL",
      22,
      "/empty",
    ]);
  });

  it("a virtual file shadows a real one; realFiles: false never touches the file system", () => {
    const thisFile = fileURLToPath(import.meta.url);
    const mock = new MockBackend();
    expect(mock.mapFile(thisFile).source).toBe("file");
    mock.addFile(thisFile, Uint8Array.of(1));
    expect(mock.mapFile(thisFile).length).toBe(1);
    const hermetic = new MockBackend({ realFiles: false });
    const error = thrown(() => hermetic.mapFile(thisFile)) as SystemCallError;
    expect([error.syscall, error.errno, error.path]).toEqual(["open", "ENOENT", thisFile]);
  });

  it("addFile checks its arguments", () => {
    const mock = new MockBackend();
    for (const [path, content] of [
      ["/a", -1],
      ["/a", 1.5],
      ["/a", "text"],
      [1, 1],
    ] as const) {
      expect(() => mock.addFile(path as string, content as number)).toThrow(ArgumentError);
    }
  });

  it("failMapping returning true makes a path fail (default mmap ENOMEM), changing no counter", () => {
    const mock = new MockBackend();
    mock.addFile("/a", 10);
    mock.addFile("/b", 10);
    mock.failMapping = (path) => path === "/a";
    const before = mock.counters();
    const error = thrown(() => mock.mapFile("/a")) as SystemCallError;
    expect(error).toBeInstanceOf(SystemCallError);
    expect([error.code, error.syscall, error.errno, error.errnoNumber, error.path]).toEqual([
      "ERR_NUVEC_SYSTEM",
      "mmap",
      "ENOMEM",
      12,
      "/a",
    ]);
    expect(mock.counters()).toEqual(before);
    expect(mock.mapFile("/b").length).toBe(10);
    mock.failMapping = (path) =>
      /\.safetensors$/.test(path) ? { syscall: "open", errno: "EACCES" } : undefined;
    const denied = thrown(() => mock.mapFile("/x.safetensors")) as SystemCallError;
    expect([denied.syscall, denied.errno, denied.errnoNumber]).toEqual(["open", "EACCES", 13]);
    expect(mock.mapFile("/a").length).toBe(10); // replaced the earlier fault
  });

  it("failMapping sees the path and the attempt number", () => {
    const seen: Array<[string, number]> = [];
    const mock = new MockBackend({
      failMapping: (path, attempt) => {
        seen.push([path, attempt]);
        return attempt === 2;
      },
    });
    mock.addFile("/a", 1);
    mock.mapFile("/a");
    expect(() => mock.mapFile("/a")).toThrow(SystemCallError);
    expect(() => mock.mapFile(5 as unknown as string)).toThrow(ArgumentError);
    mock.mapFile("/a");
    expect(seen).toEqual([
      ["/a", 1],
      ["/a", 2],
      ["/a", 3],
    ]);
  });
});
