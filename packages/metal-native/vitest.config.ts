import { packageTests } from "../../vitest.shared.js";

// Building every platform's prebuilt addon (Zig, qemu) is a release job: `npm run test:prebuilds` runs
// test/prebuilds.test.ts with vitest.prebuilds.config.ts; the main suite keeps test/prebuild-here.test.ts.
export default packageTests({
  test: { execArgv: ["--expose-gc"], exclude: ["**/node_modules/**", "test/prebuilds.test.ts"] },
});
