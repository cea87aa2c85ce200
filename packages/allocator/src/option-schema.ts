// The allocator's options, declared once (the rules of @nuvec/stats): the declaration is the check and makes
// the error messages; `SchemaType` of it is `AllocatorOptions` (option-schema.test.ts compares them).
import { optionsSchema, rules } from "@nuvec/stats";
import { ALLOCATOR_POLICIES, BOUNDED_RELEASES } from "./policy-names.js";
import { SEGMENT_OPTIONS_RULE } from "./segment-options.js";

export { SEGMENT_OPTIONS_RULE };

const { byteCount, func, number, oneOf, optional } = rules;

/** `new CachingAllocator(source, options)`. */
export const ALLOCATOR_OPTIONS = optionsSchema("new CachingAllocator()", {
  memoryLimit: optional(byteCount()),
  cacheLimit: optional(byteCount()),
  policy: optional(oneOf(ALLOCATOR_POLICIES)),
  reserveRatio: optional(number({ minimum: 1 })),
  boundedRelease: optional(oneOf(BOUNDED_RELEASES)),
  segments: SEGMENT_OPTIONS_RULE,
  onAcquire: optional(func<(buffer: never) => void>()),
  onRelease: optional(func<(buffer: never) => void>()),
});
