// What the NativeBackend contract suite's areas share: the fixture each test runs in (the backend made for it,
// the handles it made and the suite releases after it, a scratch folder for files), the ways of reading and
// writing a buffer whether or not it is host-visible, and the checks of a refusal (a typed error, no counter
// moved). Apart from the areas so that each area file holds only its tests.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NuvecErrorCode as NativeErrorCode } from "@nuvec/stats";
import { type ArgumentError, NuvecError, StateError } from "@nuvec/stats";
import { afterAll, afterEach, beforeAll, beforeEach, expect, type TestContext } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import type {
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeMappedFile,
  NativeResidencySet,
} from "../src/index.js";
import type { NativeBackendContractOptions } from "./contract.js";
import { thrown } from "./support.js";

/** Anything the suite makes and must release after each test (residency sets have no `released`). */
export interface Releasable {
  readonly released?: boolean;
  release(): void;
}

/** newBuffer refuses 0 too: a buffer has at least one byte. */
export const BAD_SIZES: ReadonlyArray<readonly [string, unknown]> = [
  ["0", 0],
  ["-0", -0],
  ...BAD_BYTE_COUNTS,
];

/** What each counter moved by from `before` to `after`; counters a backend does not report are left out. */
export function moved(
  before: NativeCounters,
  after: NativeCounters,
): Partial<Record<keyof NativeCounters, number>> {
  const difference: Partial<Record<keyof NativeCounters, number>> = {};
  for (const key of Object.keys(after) as (keyof NativeCounters)[]) {
    const [was, is] = [before[key], after[key]];
    if (typeof was === "number" && typeof is === "number") difference[key] = is - was;
  }
  return difference;
}

/** Makes the folder `path` (and its parents); returns it. */
export function makeDirectory(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

/** Expects `action` to throw a {@link NuvecError} of class `type` with `code`; returns it. */
export function expectNativeError<T extends NuvecError>(
  action: () => unknown,
  type: abstract new (...args: never[]) => T,
  code: NativeErrorCode,
): T {
  const error = thrown(action);
  expect(error).toBeInstanceOf(NuvecError);
  expect(error).toBeInstanceOf(type);
  expect((error as NuvecError).code).toBe(code);
  return error as T;
}

/** Whether `value` is a positive safe integer with one bit set. */
export function isPowerOfTwo(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0 && (value & (value - 1)) === 0;
}

/** The fixture every area of the contract suite runs its tests in (made by {@link contractSuite}). */
export interface ContractSuite {
  /** The backend of the running test (made before each test). */
  readonly backend: NativeBackend;
  /** The suite's scratch folder (made before all tests, removed after). */
  readonly directory: string;
  /** Whether the backend's buffers are host-visible. */
  readonly hostVisible: boolean;
  /** Rounds of making and releasing in the leak test. */
  readonly cycles: number;
  /** The options the suite was declared with. */
  readonly options: NativeBackendContractOptions;
  /** Releases `handle` after the test (unless the test did). */
  keep<T extends Releasable>(handle: T): T;
  /** Releases `set` after the test, before the allocations. */
  keepSet(set: NativeResidencySet): NativeResidencySet;
  /** A buffer of the backend, released after the test. */
  newBuffer(bytes: number): NativeBuffer;
  /** A mapping of the backend, released after the test. */
  mapFile(path: string): NativeMappedFile;
  /** A residency set, released after the test; skips the test where the backend has none. */
  newResidencySet(context: TestContext): NativeResidencySet;
  /** Writes `content` to a new file of the scratch folder; returns its path. */
  writeTemporaryFile(content: Uint8Array): string;
  /** The backend's `wiredBytes` counter now. */
  wiredBytes(): number;
  /** What each counter moved by since `before`. */
  movedSince(before: NativeCounters): Partial<Record<keyof NativeCounters, number>>;
  /** `action` is refused: it throws `type` with `code` (naming `argument` when given) and no counter moves. */
  expectRefused<T extends NuvecError>(
    action: () => unknown,
    type: abstract new (...args: never[]) => T,
    code: NativeErrorCode,
    argument?: string,
  ): T;
  /** Writes `bytes` at `offset`: through `contents()` where buffers are host-visible, else `write`. */
  writeBytes(buffer: NativeBuffer, bytes: Uint8Array, offset?: number): void;
  /** Reads `length` bytes from `offset` (a copy where buffers are not host-visible). */
  readBytes(buffer: NativeBuffer, offset?: number, length?: number): Uint8Array;
}

/**
 * Registers the fixture's hooks in the calling `describe` (a scratch folder, a backend from `make` before
 * each test, every handle the test kept released after it) and returns the fixture.
 */
export function contractSuite(
  make: () => NativeBackend,
  options: NativeBackendContractOptions,
): ContractSuite {
  const cycles = options.cycles ?? 100;
  const hostVisible = options.hostVisible ?? true;
  let backend: NativeBackend;
  let made: Releasable[] = [];
  let sets: NativeResidencySet[] = [];
  let directory: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), "nuvec-native-contract-"));
  });

  afterAll(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  beforeEach(() => {
    backend = make();
    made = [];
    sets = [];
  });

  afterEach(() => {
    // Sets first (they hold allocations), then buffers and mappings, newest first.
    const handles: Releasable[] = [...sets, ...made.reverse()];
    made = [];
    sets = [];
    for (const handle of handles) {
      if (handle.released === true) continue;
      try {
        handle.release();
      } catch (error) {
        if (!(error instanceof StateError && error.code === "ERR_NUVEC_RELEASED")) throw error; // a set the test released already
      }
    }
  });

  function writeBytes(buffer: NativeBuffer, bytes: Uint8Array, offset = 0): void {
    if (hostVisible) {
      new Uint8Array(buffer.contents()).set(bytes, offset);
      return;
    }
    buffer.write(bytes, offset);
  }

  function readBytes(buffer: NativeBuffer, offset = 0, length = buffer.length - offset): Uint8Array {
    if (hostVisible) return new Uint8Array(buffer.contents(), offset, length);
    return buffer.read(offset, length);
  }

  function keep<T extends Releasable>(handle: T): T {
    made.push(handle);
    return handle;
  }

  function keepSet(set: NativeResidencySet): NativeResidencySet {
    sets.push(set);
    return set;
  }

  const newBuffer = (bytes: number): NativeBuffer => keep(backend.newBuffer(bytes));
  const mapFile = (path: string): NativeMappedFile => keep(backend.mapFile(path));

  function newResidencySet(context: TestContext): NativeResidencySet {
    if (!backend.supportsResidencySets) context.skip("the backend has no residency sets");
    const set = backend.newResidencySet();
    if (set === undefined) {
      throw new Error("newResidencySet() returned undefined although supportsResidencySets");
    }
    return keepSet(set);
  }

  let fileNumber = 0;
  function writeTemporaryFile(content: Uint8Array): string {
    fileNumber += 1;
    const path = join(directory, `file-${fileNumber}.bin`);
    writeFileSync(path, content);
    return path;
  }

  const wiredBytes = (): number => backend.counters().wiredBytes;
  const movedSince = (before: NativeCounters) => moved(before, backend.counters());

  function expectRefused<T extends NuvecError>(
    action: () => unknown,
    type: abstract new (...args: never[]) => T,
    code: NativeErrorCode,
    argument?: string,
  ): T {
    const before = backend.counters();
    const error = expectNativeError(action, type, code);
    if (argument !== undefined) expect((error as unknown as ArgumentError).argument).toBe(argument);
    expect(backend.counters()).toEqual(before);
    return error;
  }

  return {
    get backend() {
      return backend;
    },
    get directory() {
      return directory;
    },
    hostVisible,
    cycles,
    options,
    keep,
    keepSet,
    newBuffer,
    mapFile,
    newResidencySet,
    writeTemporaryFile,
    wiredBytes,
    movedSince,
    expectRefused,
    writeBytes,
    readBytes,
  };
}
