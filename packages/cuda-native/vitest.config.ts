import { fileURLToPath } from "node:url";
import { packageTests } from "../../vitest.shared.js";

const metalNativeSource = (file: string) =>
  fileURLToPath(new URL(`../metal-native/src/${file}`, import.meta.url));

export default packageTests({
  resolve: {
    // The contract suite (@nuvec/native-core/contract) checks errors against @nuvec/metal-native's
    // sources: the backend must throw those same classes, so both resolve to the sources (each entry exactly:
    // a plain prefix would send `@nuvec/metal-native/addon` to `index.ts/addon`).
    alias: [
      { find: /^@nuvec\/metal-native$/, replacement: metalNativeSource("index.ts") },
      { find: /^@nuvec\/metal-native\/addon$/, replacement: metalNativeSource("addon.ts") },
    ],
  },
});
