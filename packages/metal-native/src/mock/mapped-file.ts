import type { MockMemoryHandle, NativeMappedFile } from "@nuvec/native-core";
import { allocationFailed, lookAlike, releasedError } from "@nuvec/native-core";
import type { MockStreamHold } from "./buffer.js";
import type { MockCore } from "./core.js";
import { mockMemoryHandle } from "./handles.js";
import { detachArrayBuffer } from "./support.js";

/** Where a mock mapping's bytes came from. */
export type MockMappedFileSource = "virtual" | "file";

/**
 * A pretend mapped file made by {@link MockBackend.mapFile}: copy-on-write like the real one (writes through
 * `contents()` change neither the virtual file nor the file on disk). Its bytes are those of the file when it
 * was mapped.
 */
let hasFileBrand: (value: object) => boolean;
let fileHold: (file: MockMappedFile) => MockStreamHold;

/** Whether `value` is a mapped file a mock backend made (a brand check: no `Object.create`, no Proxy). */
export function isMockMappedFile(value: unknown): value is MockMappedFile {
  return typeof value === "object" && value !== null && hasFileBrand(value);
}

/** The stream hold of a mock mapped file (see {@link MockStreamHold}). Internal. */
export function fileHoldOf(file: MockMappedFile): MockStreamHold {
  return fileHold(file);
}

/** The `this` of a mock mapped file's method or getter: a real one, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasFileBrand(value)) {
    throw lookAlike(operation, "this", "a mapped file of a mock backend");
  }
}

export class MockMappedFile implements NativeMappedFile {
  /** Its number among the backend's mappings, from 1. */
  readonly id: number;
  /** `"mapping#<id>"`: how the call log names it. */
  readonly label: string;
  readonly path: string;
  readonly length: number;
  readonly mappedLength: number;
  readonly allocatedSize: number;
  /** A virtual file (`addFile`) or a real file read through `node:fs`. */
  readonly source: MockMappedFileSource;
  readonly #core: MockCore;
  /** The file's bytes when mapped; `undefined` for zeros (a virtual file given by its length) or too large. */
  #snapshot: Uint8Array | undefined;
  #memory: ArrayBuffer | undefined;
  #released = false;
  // Operations of streams that name it and have not run; a release meanwhile waits for them (#releasing).
  #holds = 0;
  #releasing = false;

  static {
    hasFileBrand = (value) => #released in value;
    fileHold = (file) => ({
      bytes: () => new Uint8Array(file.#memoryOrMake("stream operation")),
      hold: () => {
        file.#holds += 1;
      },
      letGo: () => {
        file.#holds -= 1;
        if (file.#holds === 0 && file.#releasing) {
          file.#releasing = false;
          file.#unmap();
        }
      },
    });
  }

  /** Made by {@link MockBackend.mapFile} only. */
  constructor(
    core: MockCore,
    id: number,
    path: string,
    source: MockMappedFileSource,
    length: number,
    mappedLength: number,
    snapshot: Uint8Array | undefined,
  ) {
    this.#core = core;
    this.id = id;
    this.label = `mapping#${id}`;
    this.path = path;
    this.source = source;
    this.length = length;
    this.mappedLength = mappedLength;
    this.allocatedSize = mappedLength;
    this.#snapshot = snapshot;
  }

  get released(): boolean {
    checkThis(this, "released");
    return this.#released;
  }

  /**
   * The file's bytes (`length` of them) as an `ArrayBuffer`, the same one on every call, detached on release.
   * Throws a `OutOfMemoryError` (`ERR_NUVEC_ALLOCATION_FAILED`) for a file larger than the backend's `realMemoryUpTo`, and a
   * `StateError` (`ERR_NUVEC_RELEASED`) after release.
   */
  contents(): ArrayBuffer {
    checkThis(this, "contents()");
    return this.#core.run("mappedFile.contents", this.label, undefined, () => {
      if (this.#released) {
        throw releasedError(`${this.label}.contents(): the mapping was already released`);
      }
      return this.#memoryOrMake("contents()");
    });
  }

  /** The memory, made from the snapshot on first use. */
  #memoryOrMake(method: string): ArrayBuffer {
    if (this.#memory === undefined) {
      if (this.length > this.#core.realMemoryUpTo) {
        throw allocationFailed(
          this.length,
          `${this.label}.${method}: the mock gives real memory only to mappings of up to ` +
            `${this.#core.realMemoryUpTo} bytes (option realMemoryUpTo), ${JSON.stringify(this.path)} has ${this.length}`,
        );
      }
      const memory = new ArrayBuffer(this.length);
      if (this.#snapshot !== undefined) new Uint8Array(memory).set(this.#snapshot);
      this.#snapshot = undefined;
      this.#memory = memory;
    }
    return this.#memory;
  }

  /** Operations of streams that name it and have not run yet. */
  get streamHolds(): number {
    checkThis(this, "streamHolds");
    return this.#holds;
  }

  /** Detaches the `ArrayBuffer` handed out so far; the bytes stay and the next `contents()` gives a new one. */
  detachContents(): void {
    checkThis(this, "detachContents()");
    this.#core.run("mappedFile.detachContents", this.label, undefined, () => {
      if (this.#released) {
        throw releasedError(`${this.label}.detachContents(): the mapping was already released`);
      }
      if (this.#memory !== undefined) this.#memory = detachArrayBuffer(this.#memory, this.length);
    });
  }

  /** Synthetic pointers, distinct from every other allocation's, never valid addresses (see MOCK.md). */
  nativeHandle(): MockMemoryHandle {
    checkThis(this, "nativeHandle()");
    return this.#core.run("mappedFile.nativeHandle", this.label, undefined, () => {
      if (this.#released) {
        throw releasedError(`${this.label}.nativeHandle(): the mapping was already released`);
      }
      return mockMemoryHandle("mapping", this.id);
    });
  }

  /**
   * Unmaps the pretend file and detaches every view. A second call throws `StateError` (`ERR_NUVEC_RELEASED`).
   * While operations of a stream that name it have not run, the mapping stays (and stays in the counters)
   * until the last of them ran or was dropped; JavaScript is cut off at once.
   */
  release(): void {
    checkThis(this, "release()");
    this.#core.run("mappedFile.release", this.label, undefined, () => {
      if (this.#released) {
        throw releasedError(`${this.label}.release(): the mapping was already released`);
      }
      this.#released = true;
      if (this.#holds > 0) {
        if (this.#memory !== undefined) this.#memory = detachArrayBuffer(this.#memory, this.length);
        this.#releasing = true;
        return;
      }
      this.#unmap();
    });
  }

  #unmap(): void {
    if (this.#memory !== undefined) detachArrayBuffer(this.#memory, this.length);
    this.#memory = undefined;
    this.#snapshot = undefined;
    const counters = this.#core.counters;
    counters.mappingsReleased += 1;
    counters.mappedBytes -= this.mappedLength;
    this.#core.leave(this);
  }
}
