import type { SlotCalls } from "./raw.js";

/**
 * What an addon's handles need of the backend that made them: an identity to compare (an allocation given to
 * a backend or to one of its residency sets must be its own) and the one call they make on it. The backend
 * implements it; the handles never import the backend's class.
 */
export interface AddonOwner {
  /** @internal The addon's calls by slot, for the views of this owner's handles. */
  readonly slotCalls: SlotCalls;
  /**
   * @internal The end of a job in which this owner's handles made views: the addon covers those still
   * attached with its teardown sentinel (Node-API views). Never throws.
   */
  secureViews(): void;
}
