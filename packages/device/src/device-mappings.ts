// A Device's mapped files: a file mapped by the backend and charged in `mapped` (released again when the
// memory limit refuses it), wired as a mapped file when the wired limit allows, and unmapped now or once a
// deferred free's promise settles; with the books of the live ones and the pending ones (what close()
// unmaps and a trace opens with). Apart from device.ts because a mapped file never reaches the cache: its
// life is the backend's mapping and the allocator's account, beside the buffers' cached free path.
import type { CachingAllocator, Mapping } from "@nuvec/allocator";
import type { NativeAllocation, NativeBackend, NativeBuffer, NativeResidencySet } from "@nuvec/metal-native";
import type { Residency } from "@nuvec/residency";
import { Teardown } from "@nuvec/stats";
import { checkFreeOptions } from "./deferred-free.js";
import { mappingFreed } from "./errors.js";
import type { DeviceFigures } from "./figures.js";
import { type HandleOwner, MADE_BY_DEVICE } from "./handle-owner.js";
import { MappedFile, mappedFileState } from "./mapped-file.js";
import type { FreeOptions } from "./options.js";
import type { Quarantine } from "./quarantine.js";
import type { DeviceTrace } from "./trace.js";
import type { WiringWarning } from "./wiring-warning.js";

/** @internal Keeps a deferred free pending until its promise settles (the Device's, shared with buffers). */
export type SettleLater = <T>(
  pending: Set<T>,
  item: T,
  after: PromiseLike<unknown>,
  whileOpen: () => void,
  afterClose: () => void,
) => void;

/** @internal What a Device's mapped files need of the Device's parts. */
export interface MappingParts {
  readonly backend: NativeBackend;
  readonly allocator: CachingAllocator<NativeBuffer>;
  readonly residency: Residency<NativeAllocation, NativeResidencySet>;
  readonly quarantine: Quarantine;
  readonly wiring: WiringWarning;
  readonly figures: DeviceFigures;
  /** The trace being recorded now, if any. */
  readonly trace: () => DeviceTrace | undefined;
  readonly settleLater: SettleLater;
}

/** @internal The mapped files of one Device. */
export class DeviceMappings {
  /** The live mapped files: what close() unmaps and a trace opens with. */
  readonly live = new Set<MappedFile>();
  /** Unmaps deferred with `{ after }` whose promise has not settled: still counted in `mapped`. */
  readonly pending = new Set<MappedFile>();
  readonly #parts: MappingParts;

  constructor(parts: MappingParts) {
    this.#parts = parts;
  }

  /** Maps `path` (checked by the Device) for `device`: charged, wired when the limit allows, traced. */
  map<Owner extends HandleOwner>(device: Owner, path: string): MappedFile<Owner> {
    const { backend, allocator, wiring } = this.#parts;
    const native = backend.mapFile(path);
    let mapping: Mapping;
    try {
      mapping = allocator.addMapping(native.length);
    } catch (error) {
      native.release();
      throw error;
    }
    wiring.insert(native, true);
    const file = new MappedFile(device, native, mapping, MADE_BY_DEVICE);
    this.#parts.trace()?.map(file, native.length, path);
    this.live.add(file);
    return file;
  }

  /** `free()` of a mapped file (of this device, checked by the Device): unmapped now, or once `{ after }` settles. */
  free(file: MappedFile, options: FreeOptions | undefined): void {
    if (file.freed) throw mappingFreed("free()");
    const after = checkFreeOptions(options, "free()");
    if (after !== undefined) {
      this.#deferUnmap(file, after);
      return;
    }
    this.unmap(file);
    this.#parts.trace()?.unmap(file);
  }

  /** As the Device's deferred free of a buffer: views detached now, unmapped (and uncharged) once `after` settles. */
  #deferUnmap(file: MappedFile, after: PromiseLike<unknown>): void {
    const state = mappedFileState(file);
    state.native.detachContents();
    state.live = false;
    this.live.delete(file);
    this.#parts.settleLater(
      this.pending,
      file,
      after,
      () => {
        this.unmap(file);
        this.#parts.trace()?.unmap(file);
      },
      () => {
        state.native.release();
        this.#parts.figures.settledAfterClose(0, state.mapping.allocatedLength);
      },
    );
  }

  /** Unmaps `file`: off residency's and the allocator's books, the mapping released (or held for a moved view). */
  unmap(file: MappedFile): void {
    const { residency, allocator, quarantine } = this.#parts;
    const state = mappedFileState(file);
    // Each step runs even when one throws (a residency set's remove, the backend's unmap): the file leaves the
    // books and the mapping is released either way; the first failure is rethrown at the end.
    const teardown = new Teardown();
    teardown.run(() => residency.erase(state.native));
    teardown.run(() => allocator.removeMapping(state.mapping));
    teardown.run(() => state.native.release());
    // A view moved away keeps the mapping: counted in `quarantined` until its last holder drops it.
    teardown.run(() => quarantine.hold(state.native, state.mapping.allocatedLength, undefined));
    state.live = false;
    this.live.delete(file);
    teardown.finish();
  }
}
