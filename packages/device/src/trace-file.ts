// A trace streamed to a file (`startTrace({ file })`): the header line written at the start, then the
// recorder's chunks of events as NDJSON, each gzipped on its own (a gzip file of several members, which every
// gzip reader reads as one) when the name ends with `.gz`. A full chunk costs the allocation that fills it
// only its hand-over; it is written after the program yields (`setImmediate`), or at once when the program
// has not yielded for PENDING_CHUNKS chunks, so memory stays bounded (a few chunks) however long the trace.
// A failed write is kept, later chunks dropped, and thrown by stopTrace() (never an unhandled rejection).
import { FormatError } from "@nuvec/stats";
import { fileSystemError, nodeFileSystem } from "./file-system.js";

type Zlib = typeof import("node:zlib");

/** Chunks waiting to be written beyond which the next one is written at once. */
export const PENDING_CHUNKS = 4;

function nodeZlib(): Zlib {
  const processObject = globalThis.process as { getBuiltinModule?: (id: string) => unknown } | undefined;
  return processObject?.getBuiltinModule?.("node:zlib") as Zlib;
}

/** Writes a trace's lines to a file, in order. */
export class TraceFileWriter {
  readonly path: string;
  readonly #fd: number;
  readonly #gzip: boolean;
  readonly #fs: typeof import("node:fs");
  readonly #zlib: Zlib | undefined;
  readonly #pending: (() => Uint8Array)[] = [];
  #scheduled = false;
  #error: unknown;
  #closed = false;
  /** Bytes written to the file so far. */
  written = 0;

  /**
   * Opens (creates or truncates) the file at `path` for writing. Refused with nothing written: a path that is
   * no regular file (a FIFO, a device, a directory: `FormatError` `ERR_NUVEC_TRACE_NOT_A_FILE`) or that
   * cannot be opened (`SystemCallError`).
   */
  constructor(path: string, operation: string) {
    this.path = path;
    this.#fs = nodeFileSystem(operation);
    this.#gzip = path.endsWith(".gz");
    this.#zlib = this.#gzip ? nodeZlib() : undefined;
    const { constants } = this.#fs;
    let fd: number;
    try {
      // Non-blocking: opening a FIFO without a reader must not hang the program.
      fd = this.#fs.openSync(
        path,
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NONBLOCK,
        0o644,
      );
    } catch (error) {
      throw fileSystemError(error, operation, path);
    }
    let regular: boolean;
    try {
      regular = this.#fs.fstatSync(fd).isFile();
    } catch (error) {
      this.#fs.closeSync(fd);
      throw fileSystemError(error, operation, path);
    }
    if (!regular) {
      this.#fs.closeSync(fd);
      throw new FormatError(
        "ERR_NUVEC_TRACE_NOT_A_FILE",
        `${operation}: trace file ${path} is not a regular file (a FIFO, a device or a directory is never written)`,
      );
    }
    this.#fd = fd;
  }

  /** Writes `text` now; a failure closes the file and is thrown (`SystemCallError`). For the header line. */
  writeNow(text: string, operation: string): void {
    this.#write(new TextEncoder().encode(text));
    if (this.#error !== undefined) {
      const error = this.#error;
      this.#closeQuietly();
      throw fileSystemError(error, operation, this.path);
    }
  }

  /**
   * Queues the NDJSON bytes `lines()` makes (valid until its next call), written after the program yields, or now when PENDING_CHUNKS are
   * waiting already.
   */
  enqueue(lines: () => Uint8Array): void {
    if (this.#closed || this.#error !== undefined) return;
    this.#pending.push(lines);
    // Nothing is written before the header (a long opening fills chunks while the trace is made).
    if (this.#pending.length > PENDING_CHUNKS && this.written > 0) this.#drain();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.#drain();
      });
    }
  }

  /** Writes what waits. Never throws: a failure is kept for close(). */
  #drain(): void {
    while (this.#pending.length > 0 && !this.#closed) {
      const lines = this.#pending.shift() as () => Uint8Array;
      if (this.#error === undefined) {
        try {
          this.#write(lines());
        } catch (error) {
          this.#error ??= error;
        }
      }
    }
  }

  #write(lines: Uint8Array): void {
    if (this.#error !== undefined) return;
    try {
      const bytes = this.#zlib === undefined ? lines : this.#zlib.gzipSync(lines, { level: 6 });
      let offset = 0;
      while (offset < bytes.length) offset += this.#fs.writeSync(this.#fd, bytes, offset);
      this.written += bytes.length;
    } catch (error) {
      this.#error = error;
    }
  }

  /** Writes what waits and closes the file; throws the first failure (`SystemCallError`), the file closed. */
  close(operation: string): void {
    if (this.#closed) return;
    this.#drain();
    this.#closed = true;
    try {
      this.#fs.closeSync(this.#fd);
    } catch (error) {
      this.#error ??= error;
    }
    if (this.#error !== undefined) throw fileSystemError(this.#error, operation, this.path);
  }

  #closeQuietly(): void {
    this.#closed = true;
    try {
      this.#fs.closeSync(this.#fd);
    } catch {}
  }
}
