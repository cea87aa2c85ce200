import { packageBuild } from "../../tsup.shared.js";

export default packageBuild({
  entry: ["src/index.ts"],
  platform: "node",
  // import.meta.url (to find the package root and the addon) also works in the CommonJS build.
  shims: true,
});
