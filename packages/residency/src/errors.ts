import { byteCountProblem, NuvecArgumentError, NuvecError } from "@nuvec/stats";

/** Codes of the errors the residency manager throws. */
export type ResidencyErrorCode =
  | "ERR_NUVEC_INVALID_ARGUMENT"
  | "ERR_NUVEC_RESIDENCY_ALREADY_TRACKED"
  | "ERR_NUVEC_RESIDENCY_NOT_TRACKED"
  | "ERR_NUVEC_RESIDENCY_CLOSED";

/**
 * The base class of every error {@link Residency} throws, a {@link NuvecError}: `code` says which. Nothing
 * changed when one is thrown.
 */
export class ResidencyError extends NuvecError<ResidencyErrorCode> {}

/**
 * A bad argument: a wired limit, per-set cap or working set that is not a non-negative safe integer, or an
 * allocation whose size, as the backend reports it, is not one. Code `ERR_NUVEC_INVALID_ARGUMENT`. An instance
 * of {@link NuvecArgumentError} too (`instanceof` holds), as every argument error of nuvec.
 */
export class ResidencyArgumentError extends ResidencyError {
  constructor(
    /** The argument's name, e.g. `"bytes"`. */
    readonly argument: string,
    message: string,
  ) {
    super("ERR_NUVEC_INVALID_ARGUMENT", message);
  }
}
NuvecArgumentError.adopt(ResidencyArgumentError);

/**
 * A call that does not fit the manager's state: inserting an allocation that is already tracked
 * (`ERR_NUVEC_RESIDENCY_ALREADY_TRACKED`), erasing one that is not (`ERR_NUVEC_RESIDENCY_NOT_TRACKED`), or
 * any call after `close()` (`ERR_NUVEC_RESIDENCY_CLOSED`).
 */
export class ResidencyStateError extends ResidencyError {}

/** Throws a {@link ResidencyArgumentError} unless `value` is a byte count (a non-negative safe integer). */
export function assertBytes(value: unknown, argument: string): asserts value is number {
  const problem = byteCountProblem(value, argument);
  if (problem) throw new ResidencyArgumentError(argument, problem.message);
}
