// The one way nuvec checks what a caller passes to a public entry point: each entry point declares its
// options (or arguments) once, as a schema of rules, and that declaration makes both the check and every
// error message. `SchemaType<typeof schema>` is the type the declaration accepts, which each package's tests
// compare with its public options type, so the checks and the `.d.ts` cannot drift apart. Pure (no `node:`
// import), like the rest of this package.
import { ArgumentError } from "./errors.js";
import { byteCountProblem, describeValue } from "./size.js";

// Taken at load: a program that patches these later cannot change what a check reads.
const objectKeys = Object.keys;
const isArray = Array.isArray;
const getPrototypeOf = Object.getPrototypeOf;
const objectPrototype = Object.prototype;

/**
 * One rule: what a value must be (`expected`, as messages say it: "a boolean") and a check that returns the
 * value to use (the same value, `-0` read as `0`) or throws. `T` is the type it accepts.
 */
export interface Rule<T> {
  /** What the value must be, for messages: "a boolean", `"bounded" or "mlx"`. */
  readonly expected: string;
  /**
   * The value to use, or an `ArgumentError` whose message begins with `where` (the entry point), names
   * `name` (the option, `segments.blockRounding` when nested) and says what was given.
   */
  check(value: unknown, name: string, where: string): T;
  /**
   * Whether the option may be left out (`undefined`): set by {@link optional}. A schema does not call the
   * check of an optional rule for `undefined` (left out is left out of the result).
   */
  readonly optional: boolean;
}

/** A record of rules, one per option: the declaration of an entry point's options. */
export type Fields = Readonly<Record<string, Rule<unknown>>>;

type RequiredKeys<F extends Fields> = { [K in keyof F]: F[K]["optional"] extends true ? never : K }[keyof F];
type OptionalKeys<F extends Fields> = Exclude<keyof F, RequiredKeys<F>>;
type RuleType<R> = R extends Rule<infer T> ? T : never;

/** The type a declaration of options accepts: required options for rules that are not {@link optional}. */
export type SchemaType<F extends Fields> = { -readonly [K in RequiredKeys<F>]: RuleType<F[K]> } & {
  -readonly [K in OptionalKeys<F>]?: Exclude<RuleType<F[K]>, undefined>;
} extends infer O
  ? { [K in keyof O]: O[K] }
  : never;

function refuse(where: string, name: string, expected: string, value: unknown, cause?: unknown): never {
  throw new ArgumentError(
    name,
    `${where}: ${name} must be ${expected}, got ${describeValue(value)}`,
    cause === undefined ? undefined : { cause },
  );
}

/** A rule from `expected` and a test of the value (the value used as given). */
export function rule<T>(expected: string, test: (value: unknown) => boolean): Rule<T> {
  return {
    expected,
    optional: false,
    check(value, name, where) {
      let passed: boolean;
      try {
        passed = test(value);
      } catch (error) {
        // A getter or a Proxy's trap that throws while the value is looked at (a thenable's `then`).
        return refuse(where, name, expected, value, error);
      }
      if (!passed) refuse(where, name, expected, value);
      return value as T;
    },
  };
}

/** The same rule, the option allowed to be left out (`undefined`). */
export function optional<T>(inner: Rule<T>): Rule<T | undefined> & { readonly optional: true } {
  return {
    expected: `${inner.expected} or left out`,
    optional: true,
    check: (value, name, where) => (value === undefined ? undefined : inner.check(value, name, where)),
  };
}

/** `true` or `false`. */
export const boolean: Rule<boolean> = rule("a boolean", (value) => typeof value === "boolean");

/** A string, non-empty unless `allowEmpty`, at most `maxLength` characters when given. */
export function string(options: { allowEmpty?: boolean; maxLength?: number } = {}): Rule<string> {
  const limit = options.maxLength;
  const expected = `${options.allowEmpty ? "a string" : "a non-empty string"}${limit === undefined ? "" : ` of at most ${limit} characters`}`;
  return rule(
    expected,
    (value) =>
      typeof value === "string" &&
      (options.allowEmpty === true || value.length > 0) &&
      (limit === undefined || value.length <= limit),
  );
}

/** A byte count: a safe integer from `minimum` (0) to `maximum`; `-0` is read as `0`. */
export function byteCount(range: { minimum?: number; maximum?: number } = {}): Rule<number> {
  return {
    expected: "a number of bytes",
    optional: false,
    check(value, name, where) {
      const problem = byteCountProblem(value, name, range);
      if (problem !== undefined) throw new ArgumentError(name, `${where}: ${problem.message}`);
      return (value as number) + 0; // -0 → 0: a limit set to -0 reads back 0
    },
  };
}

/** A finite number from `minimum` to `maximum` (both included), an integer when `integer`. */
export function number(range: { minimum?: number; maximum?: number; integer?: boolean }): Rule<number> {
  const { minimum = Number.NEGATIVE_INFINITY, maximum = Number.POSITIVE_INFINITY, integer = false } = range;
  const bounds = [
    Number.isFinite(minimum) ? `≥ ${minimum}` : "",
    Number.isFinite(maximum) ? `≤ ${maximum}` : "",
  ].filter((bound) => bound !== "");
  const expected = `a finite ${integer ? "integer" : "number"}${bounds.length > 0 ? ` ${bounds.join(" and ")}` : ""}`;
  const inner = rule<number>(
    expected,
    (value) =>
      typeof value === "number" &&
      Number.isFinite(value) &&
      value >= minimum &&
      value <= maximum &&
      (!integer || Number.isInteger(value)),
  );
  return { ...inner, check: (value, name, where) => inner.check(value, name, where) + 0 };
}

/** One of `values` (compared with `===`). */
export function oneOf<const V extends readonly (string | number | boolean)[]>(values: V): Rule<V[number]> {
  return rule(
    values
      .map((value) => JSON.stringify(value))
      .join(", ")
      .replace(/, ([^,]*)$/, " or $1"),
    (value) => values.includes(value as V[number]),
  );
}

/** A function (of type `F`). */
export function func<F extends (...args: never[]) => unknown>(): Rule<F> {
  return rule("a function", (value) => typeof value === "function");
}

/** An object (not `null`) of type `T`, checked no further: what its own entry point checks in depth. */
export function object<T extends object>(expected = "an object"): Rule<T> {
  return rule(
    expected,
    (value) => (typeof value === "object" || typeof value === "function") && value !== null,
  );
}

/** A `bigint`. */
export const bigint: Rule<bigint> = rule("a bigint", (value) => typeof value === "bigint");

/** A thenable: an object or function with a `then` method (a promise). */
export const thenable: Rule<PromiseLike<unknown>> = rule("a promise (a thenable)", (value) => {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  return typeof (value as { then?: unknown }).then === "function";
});

/** The declared options of one entry point: {@link OptionsSchema.check} checks an options object against them. */
export interface OptionsSchema<F extends Fields> extends Rule<SchemaType<F>> {
  /** The entry point, as messages name it: `"Device.open()"`. */
  readonly where: string;
  /** The rules, by option name. */
  readonly fields: F;
  /**
   * Checks `options` (`undefined` is `{}`): an object with no option it does not declare, each option read
   * once and checked by its rule. Returns a plain object of the options given (each as its rule returned it).
   *
   * @throws ArgumentError naming the option (`argument`) and the entry point (the message's start).
   */
  parse(options: unknown, name?: string): SchemaType<F>;
}

/**
 * Declares the options of the entry point `where`. The declaration is the check: an unknown option, an
 * option of the wrong type or out of range, or one whose getter throws, is an `ArgumentError` naming it and
 * the entry point. Nest one for an option that is itself an object (`segments`): its options are named
 * `segments.blockRounding`.
 */
export function optionsSchema<const F extends Fields>(where: string, fields: F): OptionsSchema<F> {
  const names = objectKeys(fields);
  const rulesInOrder = names.map((key) => fields[key] as Rule<unknown>);
  // Each option's place in the declaration, and the places of the required ones: a plain object's options
  // are found from its own keys (a call passes a few of many options) and checked in declaration order.
  const placeOf = new Map(names.map((key, place) => [key, place]));
  const requiredPlaces = names.flatMap((key, place) =>
    (fields[key] as Rule<unknown>).optional ? [] : [place],
  );
  const expected = "an object";
  /** One option, read and checked by its rule into `result`. */
  const take = (
    options: object,
    place: number,
    given: boolean,
    prefix: string,
    at: string,
    result: Record<string, unknown>,
  ): void => {
    const key = names[place] as string;
    const field = rulesInOrder[place] as Rule<unknown>;
    let value: unknown;
    if (given) {
      try {
        value = (options as Record<string, unknown>)[key];
      } catch (error) {
        throw new ArgumentError(`${prefix}${key}`, `${at}: reading ${prefix}${key} failed`, { cause: error });
      }
    }
    if (value === undefined) {
      // Left out: skipped without a call (an entry point opened in a loop pays per option given).
      if (field.optional) return;
      refuse(at, `${prefix}${key}`, field.expected, value);
    }
    const checked = field.check(value, prefix === "" ? key : `${prefix}${key}`, at);
    if (checked !== undefined) result[key] = checked;
  };
  const parse = (options: unknown, name = "options", at = where): SchemaType<F> => {
    if (options === undefined) options = {};
    if (typeof options !== "object" || options === null || isArray(options)) {
      refuse(at, name, expected, options);
    }
    const prefix = name === "options" ? "" : `${name}.`;
    const result: Record<string, unknown> = {};
    let keys: string[];
    let prototype: unknown;
    try {
      keys = objectKeys(options);
      prototype = getPrototypeOf(options);
    } catch (error) {
      // A Proxy whose ownKeys (or getPrototypeOf) trap throws: the options cannot be listed.
      throw new ArgumentError(name, `${at}: the keys of ${name} could not be read`, { cause: error });
    }
    const places: number[] = [];
    for (const key of keys) {
      const place = placeOf.get(key);
      if (place === undefined) {
        throw new ArgumentError(
          `${prefix}${key}`,
          `${at}: unknown option ${prefix}${key} (the options are ${names.join(", ")})`,
        );
      }
      places.push(place);
    }
    if (prototype !== objectPrototype && prototype !== null) {
      // An object of another prototype (a class instance) may inherit options: every one is read.
      for (let place = 0; place < names.length; place++) take(options, place, true, prefix, at, result);
      return result as SchemaType<F>;
    }
    // A plain object: its own keys are its options (Object.prototype's properties are none), checked in
    // declaration order with the required ones it left out.
    for (const place of requiredPlaces) if (!places.includes(place)) places.push(place);
    for (let index = 1; index < places.length; index++) {
      const place = places[index] as number;
      let slot = index;
      for (; slot > 0 && (places[slot - 1] as number) > place; slot--)
        places[slot] = places[slot - 1] as number;
      places[slot] = place;
    }
    for (const place of places) {
      take(options, place, keys.includes(names[place] as string), prefix, at, result);
    }
    return result as SchemaType<F>;
  };
  return {
    where,
    fields,
    expected,
    optional: false,
    parse: (options, name) => parse(options, name),
    check: (value, name, at) => parse(value, name, at),
  };
}

/**
 * The rules a declaration is made of, in one namespace: `rules.byteCount()`, `rules.optional(rules.boolean)`,
 * `rules.oneOf(["bounded", "mlx"])`, ….
 */
export const rules = Object.freeze({
  bigint,
  boolean,
  byteCount,
  func,
  number,
  object,
  oneOf,
  optional,
  rule,
  string,
  thenable,
});

/**
 * Checks one positional argument of `where` against its rule: `checkArgument(string(), name, "name",
 * "startTrace()")`. Returns the value to use.
 */
export function checkArgument<T>(argumentRule: Rule<T>, value: unknown, name: string, where: string): T {
  if (value === undefined && !argumentRule.optional) refuse(where, name, argumentRule.expected, value);
  return argumentRule.check(value, name, where);
}
