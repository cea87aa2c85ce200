// Frees deferred with `{ after: promise }` (see FreeOptions): the option's check, and running the free once
// the promise settles without ever turning a failure into an unhandled rejection.

import { ArgumentError } from "@nuvec/stats";
import type { FreeOptions } from "./options.js";

/** Checks `free`/`release` options: `after`, when given, must be a thenable (a promise). */
export function checkFreeOptions(options: unknown, operation: string): PromiseLike<unknown> | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== "object") {
    throw new ArgumentError("options", `${operation}: options must be an object, got ${String(options)}`);
  }
  const after = (options as FreeOptions).after;
  if (after === undefined) return undefined;
  if (
    (typeof after !== "object" && typeof after !== "function") ||
    after === null ||
    typeof (after as { then?: unknown }).then !== "function"
  ) {
    throw new ArgumentError(
      "after",
      `${operation}: after must be a promise (a thenable), got ${after === null ? "null" : typeof after}`,
    );
  }
  return after;
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
  Promise.resolve(after).then(run, run);
}
