// Frees deferred with `{ after: promise }` (see FreeOptions): the option's check, and running the free once
// the promise settles without ever turning a failure into an unhandled rejection.

import { ArgumentError, describeValue } from "@nuvec/stats";
import { whenSettled } from "./environment.js";

/** Checks `free`/`release` options: `after`, when given, must be a thenable (a promise). */
export function checkFreeOptions(options: unknown, operation: string): PromiseLike<unknown> | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== "object") {
    throw new ArgumentError(
      "options",
      `${operation}: options must be an object, got ${describeValue(options)}`,
    );
  }
  // Each member read once (a getter or a Proxy's trap that throws is a bad argument, nothing changed).
  let after: unknown;
  let then: unknown;
  try {
    after = (options as { after?: unknown }).after;
    if (after === undefined) return undefined;
    if ((typeof after === "object" && after !== null) || typeof after === "function") {
      then = (after as { then?: unknown }).then;
    }
  } catch (error) {
    throw new ArgumentError("after", `${operation}: reading options.after failed: ${describeError(error)}`, {
      cause: error,
    });
  }
  if (typeof then !== "function") {
    throw new ArgumentError(
      "after",
      `${operation}: after must be a promise (a thenable), got ${after === null ? "null" : typeof after}`,
    );
  }
  return after as PromiseLike<unknown>;
}

function describeError(error: unknown): string {
  try {
    return error instanceof Error ? error.message : describeValue(error);
  } catch {
    return "an error";
  }
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
