// What the Device relies on from the JavaScript environment, taken once when this module loads: a program
// (or a dependency) that later deletes or patches a global (`Promise.resolve`, `Promise.prototype.then`,
// `queueMicrotask`, `FinalizationRegistry`) changes nothing the Device does. What is missing already at load
// is reported with a typed error when a Device needs it (`unsupportedEnvironment`), never as a TypeError from
// deep inside. The Device uses no `WeakRef`.
import { UnsupportedError } from "@nuvec/stats";

const PromiseIntrinsic: PromiseConstructor | undefined =
  typeof globalThis.Promise === "function" ? globalThis.Promise : undefined;
const promiseThen = PromiseIntrinsic?.prototype.then;
const reflectApply = Reflect.apply;
const FinalizationRegistryIntrinsic: typeof FinalizationRegistry | undefined =
  typeof globalThis.FinalizationRegistry === "function" ? globalThis.FinalizationRegistry : undefined;
const queueMicrotaskIntrinsic: ((callback: () => void) => void) | undefined =
  typeof globalThis.queueMicrotask === "function" ? globalThis.queueMicrotask.bind(globalThis) : undefined;

/** The intrinsics a Device cannot run without (`Promise`, `queueMicrotask`) that were missing at load. */
const missingAlways = [
  ...(promiseThen === undefined ? ["Promise"] : []),
  ...(queueMicrotaskIntrinsic === undefined ? ["queueMicrotask"] : []),
];

/** The typed refusal of an environment without `what`. */
function unsupportedEnvironment(what: string, advice: string): UnsupportedError {
  return new UnsupportedError(
    "ERR_NUVEC_UNSUPPORTED_ENVIRONMENT",
    `Device.open(): this JavaScript environment has no ${what}, which the Device needs${advice}`,
  );
}

/**
 * Checks, at `Device.open`, that the environment had at load what the Device will use: `Promise` and
 * `queueMicrotask` always, `FinalizationRegistry` for the safety net (`safetyNet: false` opens without it).
 *
 * @throws UnsupportedError (`ERR_NUVEC_UNSUPPORTED_ENVIRONMENT`) naming what is missing.
 */
export function checkEnvironment(safetyNet: boolean): void {
  if (missingAlways.length > 0) throw unsupportedEnvironment(missingAlways.join(" and "), "");
  if (safetyNet && FinalizationRegistryIntrinsic === undefined) {
    throw unsupportedEnvironment(
      "FinalizationRegistry",
      " for its safety net: open with { safetyNet: false } to run without it (free every buffer yourself)",
    );
  }
}

/** A FinalizationRegistry (the one taken at load; {@link checkEnvironment} made sure there is one). */
export function newFinalizationRegistry<T>(cleanup: (held: T) => void): FinalizationRegistry<T> {
  return new (FinalizationRegistryIntrinsic as typeof FinalizationRegistry)(cleanup);
}

/** `queueMicrotask`, the one taken at load. */
export function queueMicrotaskOnce(callback: () => void): void {
  (queueMicrotaskIntrinsic as (callback: () => void) => void)(callback);
}

/**
 * Runs `run` once `after` settles, either way, through the intrinsics taken at load: a native promise's own
 * `then` (never a patched `Promise.prototype.then` or `Promise.resolve`); any other thenable is adopted by a
 * promise of the intrinsic constructor, so its own `then` decides when it settles, as `await` would.
 */
export function whenSettled(after: PromiseLike<unknown>, run: () => void): void {
  const then = promiseThen as typeof Promise.prototype.then;
  try {
    // A native promise: its intrinsic `then` (it throws a TypeError for anything else, before calling back).
    reflectApply(then, after, [run, run]);
    return;
  } catch {
    // not a native promise: adopted below
  }
  const adopted = new (PromiseIntrinsic as PromiseConstructor)<unknown>((resolve) => resolve(after));
  reflectApply(then, adopted, [run, run]);
}
