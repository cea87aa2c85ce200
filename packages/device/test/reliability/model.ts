// The fuzzer's reference model is the allocator's (one naive model of the policy for the whole workspace,
// written from DESIGN.md and sharing no code with @nuvec/allocator); the Device's accounts must match it.
export {
  type ModelCounters,
  type ModelFacts,
  type ModelStats,
  type Outcome,
  PAGE,
  ReferenceModel as DeviceModel,
  sizeClass,
} from "../../../allocator/test/reference-model.js";
