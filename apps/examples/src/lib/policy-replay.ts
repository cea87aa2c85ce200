// The examples' replay of a trace under several cache policies in one pass: @nuvec/memory-view's replay (every
// event through the allocator's TraceValidator once, the device's facts from the trace's header unless the
// caller gives them, the workload recorded for the memory view), under the names the programs use.
import type { TraceHeader } from "@nuvec/allocator";
import {
  type ReplayDevice,
  replayDevice,
  replayForView,
  type ViewReplayOptions,
  type ViewReplayResult,
} from "@nuvec/memory-view";

export type { PolicyOutcome } from "@nuvec/memory-view";

/** The device and settings every policy runs with; any left out come from the trace's header, else defaults. */
export type PolicyReplayOptions = ViewReplayOptions;

/** What {@link replayPolicies} returns. */
export type PolicyReplayResult = ViewReplayResult;

/** The device's facts: the caller's, else the header's, else the defaults. */
export function deviceFromHeader(
  header: TraceHeader | undefined,
  options: PolicyReplayOptions,
): ReplayDevice {
  return replayDevice(header, options);
}

/**
 * Replays `batches` (arrays of trace items: an optional header object, then events) under every policy of
 * `options.policies` in one pass.
 *
 * @throws FormatError for an impossible event (from the validator); ArgumentError for a policy or a setting
 * the allocator refuses.
 */
export function replayPolicies(
  batches: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>,
  options: PolicyReplayOptions,
): Promise<PolicyReplayResult> {
  return replayForView(batches, options);
}
