// The allocator's options, declared once (the rules of @nuvec/stats): the declaration is the check and makes
// the error messages; `SchemaType` of it is `AllocatorOptions` (option-schema.test.ts compares them).
import { optionsSchema, type Rule, rules } from "@nuvec/stats";
import { checkSegmentOptions, type SegmentOptions } from "./segment-options.js";

const { byteCount, func, number, oneOf, optional } = rules;

/** The segments policy's sizes: checked in depth by {@link checkSegmentOptions} (byte counts, powers of two). */
export const SEGMENT_OPTIONS_RULE: Rule<Partial<SegmentOptions> | undefined> & { readonly optional: true } = {
  expected: "an object of byte counts",
  optional: true,
  check(value: unknown) {
    if (value === undefined) return undefined;
    checkSegmentOptions(value as Partial<SegmentOptions>);
    return value as Partial<SegmentOptions>;
  },
};

/** `new CachingAllocator(source, options)`. */
export const ALLOCATOR_OPTIONS = optionsSchema("new CachingAllocator()", {
  memoryLimit: optional(byteCount()),
  cacheLimit: optional(byteCount()),
  policy: optional(oneOf(["bounded", "mlx", "segments"] as const)),
  reserveRatio: optional(number({ minimum: 1 })),
  boundedRelease: optional(oneOf(["least-recent", "largest"] as const)),
  segments: SEGMENT_OPTIONS_RULE,
  onAcquire: optional(func<(buffer: never) => void>()),
  onRelease: optional(func<(buffer: never) => void>()),
});
