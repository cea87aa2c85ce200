// Command-line parsing shared by the example programs: sizes with binary suffixes, clear errors, exit 2.

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

/** Splits argv into flags (`--name value` or `--name=value`, booleans listed in `booleans`) and positionals. */
export function parseArguments(
  argv: string[],
  known: { values: string[]; booleans: string[] },
): { flags: Map<string, string>; positionals: string[] } {
  const flags = new Map<string, string>();
  const positionals: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index] as string;
    if (!argument.startsWith("--")) {
      positionals.push(argument);
      continue;
    }
    const [name, inline] = argument.slice(2).split("=", 2) as [string, string | undefined];
    if (known.booleans.includes(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      flags.set(name, "true");
    } else if (known.values.includes(name)) {
      const value = inline ?? argv[++index];
      if (value === undefined || value.startsWith("--")) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new UsageError(`unknown flag --${name}`);
    }
  }
  return { flags, positionals };
}
