// The values every byte-count argument of every nuvec package refuses (byteCountProblem is the one check):
// one table, imported by each layer's test of its public boundary, so that a new hostile value is added once.

/** [label, value]: not a non-negative safe integer, or not a number at all. */
export const BAD_BYTE_COUNTS: ReadonlyArray<readonly [string, unknown]> = [
  ["-1", -1],
  ["1.5", 1.5],
  ["NaN", Number.NaN],
  ["Infinity", Number.POSITIVE_INFINITY],
  ["-Infinity", Number.NEGATIVE_INFINITY],
  ["2 ** 53", 2 ** 53],
  ['"12"', "12"],
  ["12n", 12n],
  ["undefined", undefined],
  ["null", null],
  ["{}", {}],
];
