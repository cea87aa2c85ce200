// The contract suite's tests of mapped files: a file mapped copy-on-write, whole pages, counted; the
// system call that refuses each kind of file that cannot be mapped, with its errno and path. Apart because
// mapping touches the file system, which no other area of the suite does.
import { chmodSync, existsSync, readFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { SystemCallError } from "@nuvec/stats";
import { beforeEach, describe, expect, it } from "vitest";
import type { NativeBackend } from "../src/index.js";
import { type ContractSuite, makeDirectory } from "./contract-suite.js";
import { patternBytes } from "./support.js";

/** Mapped files: lengths, bytes, counters, copy-on-write, and each refusal of the system. */
export function describeMappedFiles(suite: ContractSuite): void {
  const { mapFile, writeTemporaryFile, movedSince, expectRefused } = suite;
  describe("mapped files", () => {
    let backend: NativeBackend;
    beforeEach(() => {
      backend = suite.backend;
    });

    it.each([
      ["of two pages and a part", (page: number) => 2 * page + 123],
      ["of exactly one page", (page: number) => page],
    ])(
      "map a file %s without changing it: length, whole pages, bytes byte for byte, counters",
      (_label, size) => {
        const length = size(backend.pageSize);
        const content = patternBytes(length, length);
        const path = writeTemporaryFile(content);
        const before = backend.counters();
        const mapping = mapFile(path);
        const mappedLength = Math.ceil(length / backend.pageSize) * backend.pageSize;
        expect([mapping.path, mapping.length, mapping.mappedLength]).toEqual([path, length, mappedLength]);
        expect([mapping.allocatedSize, mapping.released]).toEqual([mappedLength, false]);
        expect(movedSince(before)).toMatchObject({
          mappingsMade: 1,
          mappedBytes: mappedLength,
          bufferBytes: 0,
        });
        const memory = mapping.contents();
        expect(memory.byteLength).toBe(length);
        expect(new Uint8Array(memory)).toEqual(content);
        mapping.release();
        expect(movedSince(before)).toMatchObject({ mappingsReleased: 1, mappedBytes: 0 });
      },
    );

    it("a file mapped twice at once is counted twice; writes to one mapping reach neither the file nor the other", () => {
      const content = patternBytes(5000, 5);
      const path = writeTemporaryFile(content);
      const before = backend.counters();
      const mapping = mapFile(path);
      new Uint8Array(mapping.contents()).fill(0);
      expect(new Uint8Array(mapping.contents())[100]).toBe(0); // the mapping keeps its own writes
      const other = mapFile(path);
      expect(movedSince(before).mappedBytes).toBe(mapping.mappedLength + other.mappedLength);
      expect(new Uint8Array(other.contents())).toEqual(content);
      mapping.release();
      other.release();
      expect(new Uint8Array(readFileSync(path))).toEqual(content);
    });

    function expectSystemError(path: string, syscall: string, errno: string): void {
      const error = expectRefused(() => backend.mapFile(path), SystemCallError, "ERR_NUVEC_SYSTEM");
      expect({ syscall: error.syscall, errno: error.errno, path: error.path }).toEqual({
        syscall,
        errno,
        path,
      });
      expect(error.errnoNumber).toBe((constants.errno as Record<string, number>)[errno]);
    }

    it.each<readonly [string, string, string, () => string]>([
      ["a missing file", "open", "ENOENT", () => join(suite.directory, "does-not-exist.bin")],
      ["an empty file", "mmap", "EINVAL", () => writeTemporaryFile(new Uint8Array(0))],
      ["a directory", "open", "EISDIR", () => makeDirectory(join(suite.directory, "a-directory"))],
    ])("%s: SystemCallError %s %s with the path", (_label, syscall, errno, makePath) => {
      expectSystemError(makePath(), syscall, errno);
    });

    // sysfs files report a page of length but have no mmap (Linux; the attribute every kernel has).
    it("a file of sysfs: SystemCallError mmap ENODEV with the path", (context) => {
      const path = "/sys/kernel/uevent_seqnum";
      if (!existsSync(path)) context.skip("no sysfs here");
      expectSystemError(path, "mmap", "ENODEV");
    });

    it("an unreadable file: SystemCallError open EACCES with the path", (context) => {
      if (process.getuid?.() === 0) context.skip("root reads any file");
      if (process.platform === "win32") context.skip("no POSIX permissions");
      const path = writeTemporaryFile(patternBytes(10, 2));
      chmodSync(path, 0o000);
      expectSystemError(path, "open", "EACCES");
    });
  });
}
