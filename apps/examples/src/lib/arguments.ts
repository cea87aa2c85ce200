// Command-line parsing shared by the example programs (node:util's parseArgs): sizes with binary suffixes,
// --help from one list of flags, bad flags as one line on stderr and exit code 2.
import { parseArgs } from "node:util";
import { printable } from "@nuvec/stats";

/** A command-line mistake: the program prints its message on one line and exits with code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

const SUFFIXES: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/** Parses `8GiB`, `512m`, `1.5g`, `4096` into bytes (binary units); refuses anything else. */
export function parseBytes(text: string, flag: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const multiplier = match ? SUFFIXES[(match[2] ?? "").toLowerCase()] : undefined;
  if (!match || multiplier === undefined) {
    throw new UsageError(`${flag}: "${text}" is not a size (examples: 4096, 512MiB, 8GiB)`);
  }
  const bytes = Math.floor(Number(match[1]) * multiplier);
  if (!Number.isSafeInteger(bytes)) throw new UsageError(`${flag}: ${text} is too large`);
  return bytes;
}

/** Parses a positive number (e.g. a ratio). */
export function parsePositiveNumber(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0)
    throw new UsageError(`${flag}: "${text}" is not a positive number`);
  return value;
}

/** One flag of a program: what `--help` says about it and how it is parsed. */
export interface FlagSpec {
  /** The flag's name without dashes, e.g. `"cache-limit"`. */
  name: string;
  /** A one-letter alias, e.g. `"h"` for `--help`. */
  short?: string;
  /** A value flag's placeholder (e.g. `"BYTES"`); absent for a boolean flag. */
  value?: string;
  /** What the flag does, one short line. */
  help: string;
  /** The default, as `--help` shows it (e.g. `"8GiB"`, `"off"`). */
  defaultText?: string;
}

/** The parsed command line: flags by name (`"true"` for a boolean given) and positionals. */
export interface ParsedArguments {
  flags: Map<string, string>;
  positionals: string[];
}

/**
 * Parses `argv` with `node:util`'s `parseArgs` (strict: an unknown flag, a missing value or a value given to a
 * boolean is a {@link UsageError} of one line). `--name=value` keeps everything after the first `=`.
 */
export function parseCommandLine(argv: string[], specs: readonly FlagSpec[]): ParsedArguments {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const spec of specs) {
    options[spec.name] = {
      type: spec.value === undefined ? "boolean" : "string",
      ...(spec.short === undefined ? {} : { short: spec.short }),
    };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    // parseArgs' messages can span lines and suggest "--" for values that start with a dash: keep line one.
    const message = ((error as Error).message.split("\n")[0] ?? "")
      .replace(/^Unknown option/, "unknown flag")
      .replace(/\. To specify a positional argument.*$/, "");
    throw new UsageError(message);
  }
  const flags = new Map<string, string>();
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === undefined) continue;
    const last = Array.isArray(value) ? value.at(-1) : value;
    flags.set(name, typeof last === "boolean" ? "true" : String(last));
  }
  return { flags, positionals: parsed.positionals };
}

/** The `--help` text: the synopsis, a description, and every flag with what it does and its default. */
export function helpText(synopsis: string, description: string, specs: readonly FlagSpec[]): string {
  const left = specs.map(
    (spec) =>
      `  ${spec.short === undefined ? "    " : `-${spec.short}, `}--${spec.name}${spec.value === undefined ? "" : ` ${spec.value}`}`,
  );
  const width = Math.max(...left.map((text) => text.length)) + 2;
  const lines = specs.map((spec, index) => {
    const help = spec.defaultText === undefined ? spec.help : `${spec.help} (default ${spec.defaultText})`;
    const head = (left[index] ?? "").padEnd(width);
    // Wrapped under the help column so every line fits 80 columns.
    return wrap(help, 79 - width)
      .map((part, line) => (line === 0 ? head : " ".repeat(width)) + part)
      .join("\n");
  });
  return [`usage: ${synopsis}`, "", ...wrap(description, 79), "", "flags:", ...lines].join("\n");
}

/** The flag every program has. */
const HELP: FlagSpec = { name: "help", short: "h", help: "show this help" };
/** The flag of a program that can print its result as JSON. */
export const JSON_FLAG: FlagSpec = {
  name: "json",
  help: "print one JSON object instead of the table",
  defaultText: "off",
};

/** A program's command line: what `--help` prints, and the flags besides `--help`. */
export interface CommandLine {
  synopsis: string;
  description: string;
  flags: readonly FlagSpec[];
}

/**
 * `argv` parsed against a program's flags and `--help`. With `--help` it prints the help text (the synopsis,
 * the description, every flag) and returns `undefined`: the program then ends with exit code 0.
 */
export function readCommandLine(argv: string[], program: CommandLine): ParsedArguments | undefined {
  const specs = [...program.flags, HELP];
  const parsed = parseCommandLine(argv, specs);
  if (!parsed.flags.has("help")) return parsed;
  console.log(helpText(program.synopsis, program.description, specs));
  return undefined;
}

/** Splits `text` into lines of at most `width` characters at spaces. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/**
 * Runs a program's `main`, printing its errors: a {@link UsageError} or any typed error (one with a `code`)
 * as one line on stderr and exit code 2; anything else (a bug) with its stack and exit code 1.
 */
export async function runProgram(program: string, main: () => number | Promise<number>): Promise<void> {
  try {
    process.exitCode = await main();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // Messages quote what came from outside (a path, a trace's or a tensor's name): printed escaped and cut.
    if (error instanceof UsageError) {
      console.error(`${program}: ${printable(error.message, 300)} (see ${program} --help)`);
      process.exitCode = 2;
    } else if (typeof code === "string") {
      console.error(
        `${program}: ${printable((error as Error).message.split("\n")[0] ?? "", 300)} (${printable(code, 40)})`,
      );
      process.exitCode = 2;
    } else {
      const text = String((error as Error)?.stack ?? error);
      console.error(
        `${program}: ${text
          .split("\n")
          .map((line) => printable(line, 300))
          .join("\n")}`,
      );
      process.exitCode = 1;
    }
  }
}
