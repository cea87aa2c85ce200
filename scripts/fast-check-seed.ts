/**
 * Vitest setup shared by every package with fast-check properties: a failing property reports its seed and
 * shrink path together with the command line that replays it, and `NUVEC_FC_SEED` (plus `NUVEC_FC_PATH` for the
 * shrunk counterexample) replays a run. Seeds stay random otherwise, so every run explores new cases.
 */
import fc from "fast-check";

const seedText = process.env.NUVEC_FC_SEED;
const path = process.env.NUVEC_FC_PATH;
if (seedText !== undefined && seedText !== "" && !/^-?\d+$/.test(seedText)) {
  throw new Error(
    `NUVEC_FC_SEED must be an integer (as a failing run prints it), got ${JSON.stringify(seedText)}`,
  );
}
const seed = seedText === undefined || seedText === "" ? undefined : Number(seedText);

fc.configureGlobal({
  ...(seed === undefined ? {} : { seed }),
  ...(path === undefined || path === "" || seed === undefined ? {} : { path }),
  reporter(details) {
    if (!details.failed) return;
    const message = fc.defaultReportMessage(details) ?? "Property failed";
    const replay =
      `replay: NUVEC_FC_SEED=${details.seed}` +
      (details.counterexamplePath === null ? "" : ` NUVEC_FC_PATH=${details.counterexamplePath}`) +
      " npx vitest run <this file> -t '<this test>'";
    // Thrown, as fast-check's default reporter does, so vitest fails the test with the seed in its message.
    throw new Error(`${message}\n${replay}`, { cause: details.errorInstance ?? undefined });
  },
});
