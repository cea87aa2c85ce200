// The mock backend's files: the virtual ones a test adds, and what `mapFile` does with a path (the
// injected mapping fault, the virtual table, then the real file system), counted in the backend's counters.
import { checkPath } from "@nuvec/native-core";
import { mappingSize } from "@nuvec/stats";
import type { MockCore } from "./core.js";
import { type MockFile, readRealFile, virtualFile } from "./files.js";
import { MockMappedFile } from "./mapped-file.js";
import type { MockMappingFailure } from "./options.js";
import { systemError } from "./support.js";

/** What `mapFile` needs of its backend besides the table: the fault in force and the facts. */
export interface MappingSettings {
  readonly failMapping:
    | ((path: string, attempt: number) => boolean | MockMappingFailure | undefined)
    | undefined;
  readonly realFiles: boolean;
  readonly realMemoryUpTo: number;
  readonly pageSize: number;
}

/** The virtual files of one backend, and its mappings' numbering. Internal. */
export class MockFileTable {
  readonly #core: MockCore;
  readonly #files = new Map<string, MockFile>();
  #mappingAttempts = 0;
  #nextMappingId = 1;

  constructor(core: MockCore) {
    this.#core = core;
  }

  /** Adds (or replaces) a virtual file. */
  add(path: string, content: Uint8Array | number): void {
    this.#files.set(path, virtualFile(path, content));
  }

  /** Removes a virtual file; whether there was one. */
  remove(path: string): boolean {
    return this.#files.delete(path);
  }

  /** The paths of the virtual files. */
  paths(): string[] {
    return [...this.#files.keys()];
  }

  /** `mapFile(path)`'s body: checked, faulted, looked up, mapped and counted (see `MockBackend.mapFile`). */
  map(path: string, settings: MappingSettings): MockMappedFile {
    this.#core.assertOpen("mapFile()");
    checkPath(path);
    this.#mappingAttempts += 1;
    const failure = settings.failMapping?.(path, this.#mappingAttempts);
    if (failure !== undefined && failure !== false) {
      const { syscall = "mmap", errno = "ENOMEM" } = failure === true ? {} : failure;
      throw systemError(
        syscall,
        errno,
        path,
        `the mock was told to fail mapping attempt ${this.#mappingAttempts}`,
      );
    }
    const virtual = this.#files.get(path);
    let file = virtual;
    if (file === undefined) {
      if (!settings.realFiles) throw systemError("open", "ENOENT", path, "no virtual file has this path");
      file = readRealFile(path, settings.realMemoryUpTo);
    }
    if (file.length === 0) throw systemError("mmap", "EINVAL", path, "the file is empty");
    const mappedLength = mappingSize(file.length, settings.pageSize) as number;
    const mapping = new MockMappedFile(
      this.#core,
      this.#nextMappingId++,
      path,
      virtual === undefined ? "file" : "virtual",
      file.length,
      mappedLength,
      file.bytes,
    );
    this.#core.adopt(mapping);
    this.#core.counters.mappingsMade += 1;
    this.#core.counters.mappedBytes += mappedLength;
    return mapping;
  }
}
