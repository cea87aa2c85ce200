// What the scripts that make a trace from another share: reading SOURCE NUMBER TARGET from the command line
// (TARGET checked before the work: a path that cannot be written fails at once, never after reading the
// source), and writing the result as gzipped NDJSON.
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { prepareOutputPath } from "../../../scripts/output-path.mjs";

/**
 * The source trace's header and event lines (unparsed), NUMBER, and the checked TARGET path. A missing
 * argument, a NUMBER below 1 or a TARGET that cannot be written exits 2 with one line.
 */
export function traceScriptArguments(usage) {
  const [source, given, target] = process.argv.slice(2);
  const number = Number(given);
  if (!source || !target || !(number >= 1)) {
    console.error(`usage: ${usage}`);
    process.exit(2);
  }
  let output;
  try {
    output = prepareOutputPath(target, "TARGET");
  } catch (error) {
    console.error(`${error.message} (${error.code})`);
    process.exit(2);
  }
  const lines = gunzipSync(readFileSync(source)).toString("utf8").trim().split("\n");
  return { header: JSON.parse(lines[0]), lines: lines.slice(1), number, output };
}

/** Writes `header` and `events` to `output` as gzipped NDJSON, then prints the header. */
export function writeTrace(output, header, events, level) {
  const text = [header, ...events].map((line) => JSON.stringify(line)).join("\n");
  writeFileSync(output, gzipSync(`${text}\n`, { level }));
  console.log(JSON.stringify(header));
}
