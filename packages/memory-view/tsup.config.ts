import { packageBuild } from "../../tsup.shared.js";

export default packageBuild({
  entry: ["src/index.ts", "src/cli.ts"],
  platform: "node",
  // import.meta.url (to find uPlot's files) also works in the CommonJS build.
  shims: true,
});
