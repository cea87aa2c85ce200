// One way for every teardown (close, dispose, clearing a cache) to survive a step that throws: run every
// step, remember what failed, and report once everything ran. A teardown that stops at its first failure
// leaves the rest unreleased and the object half open ("closed" still false), which a retry cannot finish
// either.

import { ArgumentError } from "./errors.js";
import { describeValue } from "./size.js";

/**
 * Collects the failures of the steps of a teardown, so that every step runs: `run(step)` catches what the
 * step throws, `finish()` rethrows once they all ran.
 *
 * What `finish()` throws: the first failure itself (its class and `code` intact, so `instanceof` and `code`
 * checks keep working). When later steps failed too, they are attached to it as `suppressed` (an array, in
 * the order they failed; a non-enumerable property, as TC39's `SuppressedError` names the error it hides).
 * When the first failure cannot carry them (a thrown primitive, a frozen object), an `AggregateError` of all
 * of them is thrown instead, with the first as its `cause`.
 */
export class Teardown {
  readonly #failures: unknown[] = [];

  /**
   * Runs `step`; what it throws is kept for {@link Teardown.finish}, and the teardown goes on. A `step` that
   * is not a function is a caller's mistake, refused at once (`ArgumentError`), not kept as a failure.
   */
  run(step: () => void): void {
    if (typeof step !== "function") {
      throw new ArgumentError(
        "step",
        `Teardown.run(step): step must be a function, got ${describeValue(step)}`,
      );
    }
    try {
      step();
    } catch (error) {
      this.#failures.push(error);
    }
  }

  /** Keeps `error` as if a step had thrown it. */
  fail(error: unknown): void {
    this.#failures.push(error);
  }

  /** Whether any step failed so far. */
  get failed(): boolean {
    return this.#failures.length > 0;
  }

  /** Throws as the class comment says when a step failed; returns otherwise. */
  finish(): void {
    const failures = this.#failures;
    if (failures.length === 0) return;
    const [first, ...later] = failures;
    if (later.length === 0) throw first;
    if (typeof first === "object" && first !== null && Object.isExtensible(first)) {
      const earlier = (first as { suppressed?: unknown }).suppressed;
      const suppressed = Array.isArray(earlier) ? [...earlier, ...later] : later;
      try {
        Object.defineProperty(first, "suppressed", {
          value: suppressed,
          configurable: true,
          writable: true,
          enumerable: false,
        });
        throw first;
      } catch (error) {
        if (error === first) throw first;
        // A Proxy or an object whose property cannot be defined: fall through to the aggregate.
      }
    }
    throw new AggregateError(failures, `${failures.length} steps of a teardown failed`, { cause: first });
  }
}
