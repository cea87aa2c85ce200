import { fileURLToPath } from "node:url";
import { packageTests } from "../../vitest.shared.js";

export default packageTests({
  resolve: {
    // The contract suite (../metal-native/test/contract.ts) checks errors against @nuvec/metal-native's
    // sources: the backend must throw those same classes, so both resolve to the sources.
    alias: {
      "@nuvec/metal-native": fileURLToPath(new URL("../metal-native/src/index.ts", import.meta.url)),
    },
  },
});
