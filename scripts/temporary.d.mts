// Types of scripts/temporary.mjs.

/** A temporary folder and the way to remove it now. */
export interface TemporaryFolder {
  /** The folder, made with `mkdtemp` under the system's temporary folder. */
  readonly path: string;
  /** Removes it now (idempotent); its guardian then ends. */
  remove(): void;
}

/**
 * Makes a temporary folder named `prefix…` that is removed when the program ends, however it ends (a normal
 * end, an error, SIGINT, SIGTERM, SIGHUP, SIGKILL): a guardian process detached with setsid removes it
 * once the pipe from this process closes.
 */
export declare function temporaryFolder(prefix: string): TemporaryFolder;

/**
 * A script's scratch folder: a {@link temporaryFolder}, or with `keep` (the script's --keep) a bare folder
 * that stays for a look afterwards, whose `remove()` leaves it and prints where it is after `label`.
 */
export declare function scratchFolder(prefix: string, keep: boolean, label: string): TemporaryFolder;
