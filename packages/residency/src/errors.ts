import { ArgumentError, byteCountProblem } from "@nuvec/stats";

/** Throws an `ArgumentError` unless `value` is a byte count (a non-negative safe integer). */
export function assertBytes(value: unknown, argument: string): asserts value is number {
  const problem = byteCountProblem(value, argument);
  if (problem) throw new ArgumentError(argument, problem.message);
}
