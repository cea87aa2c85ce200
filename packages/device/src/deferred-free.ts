// Frees deferred with `{ after: promise }` (see FreeOptions): the option's check, and running the free once
// the promise settles without ever turning a failure into an unhandled rejection.

import { whenSettled } from "./environment.js";
import { FREE_OPTIONS } from "./schemas.js";

/** Checks `free`/`release` options: `after`, when given, must be a thenable (a promise). */
export function checkFreeOptions(options: unknown, operation: string): PromiseLike<unknown> | undefined {
  if (options === undefined) return undefined;
  return FREE_OPTIONS.check(options, "options", operation).after;
}

/**
 * Runs `settle` once `after` settles, fulfilled or rejected. A failure inside `settle` (say, a backend closed
 * under the device) must not become an unhandled rejection, which would end the process: it is reported as
 * a process warning instead.
 */
export function settleAfter(after: PromiseLike<unknown>, settle: () => void): void {
  const run = () => {
    try {
      settle();
    } catch (error) {
      const warn = globalThis.process?.emitWarning;
      if (typeof warn === "function") {
        warn.call(
          globalThis.process,
          `nuvec: a deferred free failed: ${(error as Error)?.message ?? error}`,
          {
            code: "NUVEC_DEFERRED_FREE_FAILED",
          },
        );
      }
    }
  };
  // The intrinsics taken at load: a patched Promise.resolve or then cannot leave the free pending forever.
  whenSettled(after, run);
}
