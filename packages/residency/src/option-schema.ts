// Residency's options, declared once (the rules of @nuvec/stats): the declaration is the check and makes the
// error messages; `SchemaType` of it is `ResidencyOptions` (option-schema.test.ts compares them).
import { optionsSchema, rules } from "@nuvec/stats";

const { byteCount, optional, rule } = rules;

/** `new Residency(backend, options)`. */
export const RESIDENCY_OPTIONS = optionsSchema("new Residency()", {
  workingSet: byteCount(),
  maxPercentPerSet: optional(
    rule<string | null>(
      "the text of a whole percent (as MLX_RESIDENCY_SET_MAX_PCT) or null",
      (value) => typeof value === "string" || value === null,
    ),
  ),
});
