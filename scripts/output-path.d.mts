// Types of scripts/output-path.mjs.

/** An output path that cannot be written: `code` is the system's (`ENOENT`, `ENOTDIR`, `EISDIR`, `EACCES`…). */
export declare class OutputPathError extends Error {
  readonly code: string;
  constructor(message: string, code: string);
}

/**
 * Checks that the file `given` (for `flag`, named in the message) can be written and makes its missing
 * folders, one at a time (each failure is one clear error). Returns the absolute path.
 *
 * @throws OutputPathError when the path names a directory, a FIFO or a device, when a folder above it is a
 *   file, or when a folder cannot be made or written to.
 */
export declare function prepareOutputPath(given: string, flag: string): string;
