// A file mapped without a copy by Device.mapFile, and the state the Device keeps for it.
import type { Mapping } from "@nuvec/allocator";
import type { NativeMappedFile } from "@nuvec/metal-native";
import { ArgumentError } from "@nuvec/stats";
import { deviceClosed, lookAlike, mappingFreed } from "./errors.js";
import { type HandleOwner, MADE_BY_DEVICE } from "./handle-owner.js";
import type { FreeOptions } from "./options.js";

/** @internal What the Device keeps for a mapped file: the backend's mapping and the allocator's account. */
export interface MappedFileState {
  readonly native: NativeMappedFile;
  readonly mapping: Mapping;
  live: boolean;
}

// The Device reaches a MappedFile's state through this (set in the class's static block), so that it is no
// member of the public class.
let stateOfFile: (file: MappedFile) => MappedFileState;
let hasFileBrand: (value: object) => boolean;

/**
 * @internal Whether `value` is a MappedFile that a Device made: a brand check on the class's private state,
 * so `Object.create(MappedFile.prototype)`, a Proxy of a mapped file and a structuredClone of one are not.
 */
export function isMappedFile(value: unknown): value is MappedFile {
  return typeof value === "object" && value !== null && hasFileBrand(value);
}

/** The `this` of a MappedFile method or getter: a real MappedFile, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (!isMappedFile(value)) throw lookAlike(operation, "this", "a MappedFile made by device.mapFile()");
}

/** @internal The state behind `file`. */
export function mappedFileState(file: MappedFile): MappedFileState {
  return stateOfFile(file);
}

/** A file mapped without a copy by {@link Device.mapFile}: read-only by convention (writes stay private). */
export class MappedFile<Owner extends HandleOwner = HandleOwner> {
  readonly #device: Owner;
  readonly #state: MappedFileState;

  static {
    stateOfFile = (file) => file.#state;
    hasFileBrand = (value) => #state in value;
  }

  /** @internal Made by {@link Device.mapFile}. */
  constructor(device: Owner, native: NativeMappedFile, mapping: Mapping, token?: typeof MADE_BY_DEVICE) {
    if (token !== MADE_BY_DEVICE) {
      throw new ArgumentError(
        "new MappedFile()",
        "new MappedFile(): a MappedFile is made by device.mapFile(path)",
      );
    }
    this.#device = device;
    this.#state = { native, mapping, live: true };
  }

  /** The path it was mapped from. */
  get path(): string {
    checkThis(this, "path");
    return this.#state.native.path;
  }

  /** The file's length in bytes. */
  get length(): number {
    checkThis(this, "length");
    return this.#state.native.length;
  }

  /** The bytes charged in `mapped`: the length rounded up to the system's pages. */
  get allocatedLength(): number {
    checkThis(this, "allocatedLength");
    return this.#state.mapping.allocatedLength;
  }

  /** True once freed (unmapped). */
  get freed(): boolean {
    checkThis(this, "freed");
    return !this.#state.live;
  }

  /** The device this mapping belongs to. */
  get device(): Owner {
    checkThis(this, "device");
    return this.#device;
  }

  /** The file's bytes without a copy (`length` bytes); detached when the file is freed. */
  contents(): ArrayBuffer {
    checkThis(this, "contents()");
    this.#check("contents()");
    return this.#state.native.contents();
  }

  /**
   * Unmaps the file (same as `device.free(file, options)`). A second call throws. `{ after: promise }`: views
   * are detached now, the file is unmapped once the promise settles (see {@link FreeOptions}).
   */
  free(options?: FreeOptions): void {
    checkThis(this, "free()");
    this.#device.free(this, options);
  }

  /** `using file = device.mapFile(path)` frees it at the end of the scope (no error if already freed). */
  [Symbol.dispose](): void {
    checkThis(this, "[Symbol.dispose]()");
    if (this.#state.live && !this.#device.closed) this.#device.free(this);
  }

  #check(operation: string): void {
    if (this.#device.closed) throw deviceClosed(operation);
    if (!this.#state.live) throw mappingFreed(operation);
  }
}
