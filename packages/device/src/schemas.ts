// Every option and argument of the Device's public entry points, declared once (the rules of @nuvec/stats):
// each declaration is the check and makes the error messages, and `SchemaType` of it is the public options
// type (schemas.test.ts compares them). The allocator checks its own options again; a Device reports an
// option by the entry point it was given to.
import { ALLOCATOR_POLICIES, BOUNDED_RELEASES, SEGMENT_OPTIONS_RULE } from "@nuvec/allocator";
import type { NativeBackend } from "@nuvec/metal-native";
import { optionsSchema, type Rule, rules } from "@nuvec/stats";
import { isTimerInterval, MAX_TIMER_MILLISECONDS } from "./options.js";

const { bigint, boolean, byteCount, number, object, oneOf, optional, rule, string, thenable } = rules;

/** A keep-alive interval a timer honours as given: positive, finite, at most 2³¹−1 ms. */
export const timerInterval: Rule<number> = rule(
  `a positive number of milliseconds of at most ${MAX_TIMER_MILLISECONDS}`,
  isTimerInterval,
);

/** `Device.open(options)`. */
export const DEVICE_OPEN = optionsSchema("Device.open()", {
  backend: optional(object<NativeBackend>("a native backend (an object)")),
  memoryLimit: optional(byteCount()),
  cacheLimit: optional(byteCount()),
  wiredLimit: optional(byteCount()),
  policy: optional(oneOf(ALLOCATOR_POLICIES)),
  segments: SEGMENT_OPTIONS_RULE,
  reserveRatio: optional(number({ minimum: 1 })),
  boundedRelease: optional(oneOf(BOUNDED_RELEASES)),
  residencySetMaxPercent: optional(number({ minimum: 0, maximum: 100, integer: true })),
  safetyNet: optional(boolean),
  residencyKeepAliveMilliseconds: optional(timerInterval),
  metal: optional(
    optionsSchema("Device.open()", {
      commandQueue: optional(bigint),
      device: optional(bigint),
    }),
  ),
});

/** `free(options)`, `buffer.free(options)`, `mappedFile.free(options)`. */
export const FREE_OPTIONS = optionsSchema("free()", { after: optional(thenable) });

/** The name `startTrace(name)` gives a trace's header (printed by tools: kept to one line's worth). */
export const TRACE_NAME = string({ maxLength: 256 });

/** A path to map: a non-empty string (the backend checks the rest, such as a NUL byte). */
export const PATH = string();

/** A limit in bytes (`setMemoryLimit`, `setCacheLimit`, `setWiredLimit`): `-0` is read as `0`. */
export const LIMIT = byteCount();

/** The bytes `readSafetensorsHeader(bytes)` reads: an `ArrayBuffer` (a mapped file's `contents()`). */
export const SAFETENSORS_BYTES = rule<ArrayBuffer>("an ArrayBuffer", (value) => value instanceof ArrayBuffer);
