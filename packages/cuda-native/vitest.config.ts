import { packageTests } from "../../vitest.shared.js";

// @nuvec/metal-native resolves to its built package (dist, through its exports), as a user's tests see it:
// the error classes both it and the contract suite (@nuvec/native-core/contract) check come from
// @nuvec/stats, one copy for both. The GPU bundle (gpu/bundle.mjs) builds its own from the sources instead.
export default packageTests();
