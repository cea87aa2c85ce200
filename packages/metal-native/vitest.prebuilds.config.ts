import { packageTests } from "../../vitest.shared.js";

// `npm run test:prebuilds`: the Linux prebuilds cross-compiled with Zig as they are packed, checked and run
// (test/prebuilds.test.ts). A release job, not part of `npm test`.
export default packageTests({
  test: {
    include: ["test/prebuilds.test.ts"],
    outputFile: { json: ".vitest-results/prebuilds.json" },
  },
});
